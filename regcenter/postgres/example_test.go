package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // serves postgres:// URLs to regcenter.Open
)

// Open a registry on PostgreSQL by URL, write two nodes atomically and
// read them back. (The example runs against the server this package's
// tests start; in an application the URL names your database, e.g.
// "postgres://shardjob@db.example:5432/jobs?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem",
// and the password comes from DigestFile or PGPASSFILE.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := regcenter.Open(ctx, regcenter.Config{URL: pg.DSN, Namespace: "example-shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	_ = rc.DeleteTree(ctx, "/orders")
	if err := rc.EnsurePath(ctx, "/orders"); err != nil {
		fmt.Println(err)
		return
	}
	err = rc.Multi(ctx,
		regcenter.CreateOp{Path: "/orders/config", Data: []byte("cron: '0 * * * * *'")},
		regcenter.CreateOp{Path: "/orders/leader", Data: []byte("host-1"), Mode: regcenter.Ephemeral},
	)
	fmt.Println("multi:", err)
	data, st, err := rc.Get(ctx, "/orders/leader")
	fmt.Println(string(data), st.EphemeralOwner == rc.Session().ID(), err)
	err = rc.Multi(ctx,
		regcenter.SetOp{Path: "/orders/config", Data: []byte("cron: '*/5 * * * * *'"), Version: 0},
		regcenter.CreateOp{Path: "/orders/leader"},
	)
	var me *regcenter.MultiError
	fmt.Println(errors.As(err, &me), me.Index, errors.Is(err, regcenter.ErrNodeExists))
	data, _, _ = rc.Get(ctx, "/orders/config")
	fmt.Println(string(data))
	// Output:
	// multi: <nil>
	// host-1 true <nil>
	// true 1 true
	// cron: '0 * * * * *'
}
