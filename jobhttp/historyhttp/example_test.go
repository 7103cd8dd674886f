package historyhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/shardjob/shardjob/history"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/jobhttp/historyhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
	_ "github.com/shardjob/shardjob/store/sqlite"
)

// ExampleNew serves an instance's execution history next to the operator's
// endpoints: an operator triggers a job, then reads its executions at GET
// /history. ZooKeeper is started with zktest and the handler served by
// httptest; in production use your own servers and admin port.
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

	dir, err := os.MkdirTemp("", "shardjob-history-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rec, err := history.Open(ctx, history.Config{DSN: filepath.Join(dir, "history.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rec.Close(ctx)

	sched, err := job.NewScheduler(rc, append([]job.Option{job.WithServerID("instance-1")}, rec.SchedulerOptions()...)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = sched.Add(ctx, job.Config{Name: "orders-sync", Cron: "0 0 3 * * *", ShardingTotalCount: 2},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error { return nil }))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sched.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer sched.Shutdown(ctx)

	// The one line that adds the history to the handler.
	const token = "s3cr3t"
	srv := httptest.NewServer(jobhttp.NewHandler(rc, jobhttp.Options{Token: token, History: historyhttp.New(rec)}))
	defer srv.Close()

	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/jobs/orders-sync/trigger", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("POST trigger:", resp.StatusCode)

	// curl 'http://127.0.0.1:8081/shardjob/history?job=orders-sync'
	// The recorder writes in the background: read until both items are in.
	var page struct {
		Executions []struct {
			Item   int    `json:"item"`
			Kind   string `json:"kind"`
			Result string `json:"result"`
		} `json:"executions"`
	}
	for len(page.Executions) < 2 {
		if err := rec.Flush(ctx); err != nil {
			fmt.Println(err)
			return
		}
		resp, err := srv.Client().Get(srv.URL + "/history?job=orders-sync")
		if err != nil {
			fmt.Println(err)
			return
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		select {
		case <-ctx.Done():
			fmt.Println("no history:", ctx.Err())
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	sort.Slice(page.Executions, func(i, j int) bool { return page.Executions[i].Item < page.Executions[j].Item })
	for _, e := range page.Executions {
		fmt.Printf("GET /history: item %d, %s, %s\n", e.Item, e.Kind, e.Result)
	}

	// Output:
	// POST trigger: 200
	// GET /history: item 0, trigger, success
	// GET /history: item 1, trigger, success
}
