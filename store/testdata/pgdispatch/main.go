// A dispatcher on PostgreSQL.
package main

import (
	"context"
	"os"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/postgres"
)

func main() {
	ctx := context.Background()
	d, err := dispatch.Open(ctx, dispatch.Config{Driver: "postgres", DSN: os.Getenv("DSN"), NodeID: "node-1"})
	if err != nil {
		panic(err)
	}
	_ = d.Close(ctx)
}
