package dispatchhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/dispatchhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

// ExampleNew serves a dispatcher's caps and queues next to the operator's
// endpoints, at GET /dispatch/workers and on the console's dispatcher page.
// ZooKeeper is started with zktest and the handler served by httptest; in
// production use your own servers and admin port.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	zk, err := zktest.StartCluster(ctx, zktest.Options{})
	if err != nil {
		fmt.Println(err) // wraps zktest.ErrNotInstalled if ZooKeeper is missing
		return
	}
	defer zk.Close()
	rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zk.Servers(), Namespace: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()

	dir, err := os.MkdirTemp("", "shardjob-dispatch-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	d, err := dispatch.Open(ctx, dispatch.Config{DSN: filepath.Join(dir, "dispatch.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close(ctx)
	if err := d.PutWorker(ctx, dispatch.Worker{Name: "email", MaxRunning: 2}); err != nil {
		fmt.Println(err)
		return
	}
	now := time.Now()
	_, err = d.Assign(ctx, dispatch.Assignment{Worker: "email", Start: now.Add(-time.Minute), End: now.Add(time.Hour),
		Tasks: []dispatch.NewTask{{ExternalID: "welcome-1"}, {ExternalID: "welcome-2"}, {ExternalID: "welcome-3"}}})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The one line that adds the dispatcher to the handler.
	srv := httptest.NewServer(jobhttp.NewHandler(rc, jobhttp.Options{Dispatcher: dispatchhttp.New(d)}))
	defer srv.Close()

	// curl http://127.0.0.1:8081/shardjob/dispatch/workers
	resp, err := srv.Client().Get(srv.URL + "/dispatch/workers")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var st jobhttp.DispatchState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("GET /dispatch/workers: %d, global cap %d\n", resp.StatusCode, st.Global.MaxRunning)
	for _, q := range st.Queues {
		fmt.Printf("%s: cap %d, %d due, %d waiting\n", q.Worker, q.MaxRunning, q.Due, q.Tasks["waiting"])
	}

	// Output:
	// GET /dispatch/workers: 200, global cap 100
	// email: cap 2, 3 due, 3 waiting
}
