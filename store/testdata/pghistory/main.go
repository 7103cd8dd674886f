// A program that keeps its execution history in PostgreSQL.
package main

import (
	"context"
	"os"

	"github.com/shardjob/shardjob/history"
	_ "github.com/shardjob/shardjob/store/postgres"
)

func main() {
	ctx := context.Background()
	rec, err := history.Open(ctx, history.Config{Driver: history.DriverPostgres, DSN: os.Getenv("DSN")})
	if err != nil {
		panic(err)
	}
	_ = rec.Close(ctx)
}
