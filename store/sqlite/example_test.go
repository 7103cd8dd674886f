package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/history"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

// One import links SQLite for both the history and the dispatcher; each
// opens its own file.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "store-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(dir, "history.db")})
	if err != nil {
		panic(err)
	}
	defer rec.Close(ctx)
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(dir, "dispatch.db")})
	if err != nil {
		panic(err)
	}
	defer d.Close(ctx)

	_, err = history.Open(ctx, history.Config{Driver: history.DriverPostgres, DSN: "postgres://db/shop"})
	fmt.Println(err)
	// Output:
	// history: invalid config: the postgres store is not linked into this program (sqlite is): import _ "github.com/shardjob/shardjob/store/postgres"
}
