// A program that keeps its execution history in SQLite.
package main

import (
	"context"

	"github.com/shardjob/shardjob/history"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	ctx := context.Background()
	rec, err := history.Open(ctx, history.Config{DSN: "history.db"})
	if err != nil {
		panic(err)
	}
	_ = rec.Close(ctx)
}
