// A dispatcher on SQLite.
package main

import (
	"context"

	"github.com/shardjob/shardjob/dispatch"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

func main() {
	ctx := context.Background()
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: "dispatch.db"})
	if err != nil {
		panic(err)
	}
	_ = d.Close(ctx)
}
