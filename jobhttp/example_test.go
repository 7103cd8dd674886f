package jobhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobhttp"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

// ExampleNewHandler mounts the handler next to an application's other
// admin endpoints and asks it what an operator would: the job list, then a
// trigger without and with the token. ZooKeeper is started with zktest and
// the handler served by httptest; in production use your own servers, your
// application's admin port and a token from its configuration.
func ExampleNewHandler() {
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

	// The application: one instance of one job that fires at 03:00 and,
	// here, only when an operator triggers it.
	sched, err := job.NewScheduler(rc, job.WithServerID("instance-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	triggered := make(chan int, 2)
	err = sched.Add(ctx, job.Config{Name: "orders-sync", Cron: "0 0 3 * * *", ShardingTotalCount: 2},
		job.SimpleFunc(func(ctx context.Context, sc job.ShardingContext) error {
			if sc.Kind == job.KindTrigger {
				triggered <- sc.Item
			}
			return nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sched.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer sched.Shutdown(ctx)

	// Without a token the handler is read-only; with one, every POST needs
	// "Authorization: Bearer <token>".
	const token = "s3cr3t" // e.g. os.Getenv("SHARDJOB_TOKEN")
	mux := http.NewServeMux()
	mux.Handle("/shardjob/", http.StripPrefix("/shardjob", jobhttp.NewHandler(rc, jobhttp.Options{Token: token})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	do := func(method, path, token string) (int, []byte) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+"/shardjob"+path, nil)
		if err != nil {
			return 0, []byte(err.Error())
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	// curl http://127.0.0.1:8081/shardjob/jobs
	code, body := do("GET", "/jobs", "")
	var jobs []struct {
		Name               string `json:"name"`
		Cron               string `json:"cron"`
		ShardingTotalCount int    `json:"shardingTotalCount"`
		Online             int    `json:"online"`
	}
	if err := json.Unmarshal(body, &jobs); err != nil {
		fmt.Println(code, err)
		return
	}
	for _, j := range jobs {
		fmt.Printf("GET /jobs: %d: %s, cron %q, %d items, %d online\n", code, j.Name, j.Cron, j.ShardingTotalCount, j.Online)
	}

	// curl -X POST http://127.0.0.1:8081/shardjob/jobs/orders-sync/trigger
	code, body = do("POST", "/jobs/orders-sync/trigger", "")
	fmt.Printf("POST trigger without the token: %d %s\n", code, strings.Join(strings.Fields(string(body)), " "))

	// curl -X POST -H "Authorization: Bearer $SHARDJOB_TOKEN" http://127.0.0.1:8081/shardjob/jobs/orders-sync/trigger
	code, _ = do("POST", "/jobs/orders-sync/trigger", token)
	fmt.Printf("POST trigger with the token: %d\n", code)
	var items []int
	for len(items) < 2 {
		select {
		case item := <-triggered:
			items = append(items, item)
		case <-ctx.Done():
			fmt.Println("no trigger:", ctx.Err())
			return
		}
	}
	sort.Ints(items)
	fmt.Println("items run once now:", items)

	// Output:
	// GET /jobs: 200: orders-sync, cron "0 0 3 * * *", 2 items, 1 online
	// POST trigger without the token: 401 { "error": "unauthorized: send Authorization: Bearer <token>" }
	// POST trigger with the token: 200
	// items run once now: [0 1]
}
