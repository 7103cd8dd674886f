package jobhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
	"github.com/shardjob/shardjob/job"
)

// TestHTTPHostileConfig: with a hostile document in the config node, the
// GETs that decode it answer with the problem instead of crashing the
// process; POSTing a hostile or oversized document is refused, naming the
// problem, and nothing is written.
func TestHTTPHostileConfig(t *testing.T) {
	const token = "s3cret"
	cfg := job.Config{Name: "report", Cron: "* * * * * *", ShardingTotalCount: 4}
	hc := newHTTPCluster(t, cfg, token)
	path := layout.Job(cfg.Name).Config()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, _, err := hc.rc.Get(ctx, path)
	if err != nil {
		t.Fatal(err)
	}

	for _, doc := range []struct {
		name string
		data []byte
		want string
	}{
		{"self merge", hostiledoc.SelfMerge(cfg.Name), hostiledoc.StoredSelfMergeError},
		{"merge chain", hostiledoc.MergeChain(cfg.Name, 40), hostiledoc.StoredMergeChainError},
	} {
		t.Run(doc.name, func(t *testing.T) {
			// POST: refused before anything is written.
			if body := hc.want(http.StatusBadRequest, "POST", "/jobs/report/config", token, string(doc.data)); !strings.Contains(body, doc.want) {
				t.Errorf("POST: %s does not say %q", body, doc.want)
			}
			if got, _, err := hc.rc.Get(ctx, path); err != nil || string(got) != string(good) {
				t.Fatalf("POST wrote the node: %q, %v", got, err)
			}

			// GETs of a node that holds it.
			if _, err := hc.rc.Set(ctx, path, doc.data, -1); err != nil {
				t.Fatal(err)
			}
			var st admin.JobStatus
			if err := json.Unmarshal([]byte(hc.want(http.StatusOK, "GET", "/jobs/report", "", "")), &st); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(st.ConfigError, doc.want) {
				t.Errorf("GET /jobs/report: configError %q does not say %q", st.ConfigError, doc.want)
			}
			var sums []admin.JobSummary
			if err := json.Unmarshal([]byte(hc.want(http.StatusOK, "GET", "/jobs", "", "")), &sums); err != nil {
				t.Fatal(err)
			}
			if len(sums) != 1 || !strings.Contains(sums[0].ConfigError, doc.want) {
				t.Errorf("GET /jobs: %+v does not say %q", sums, doc.want)
			}
			// The raw document is served as stored, for the operator to
			// see and replace.
			if body := hc.want(http.StatusOK, "GET", "/jobs/report/config", "", ""); body != string(doc.data) {
				t.Errorf("GET /jobs/report/config = %q", body)
			}
			// A good config replaces it.
			hc.want(http.StatusOK, "POST", "/jobs/report/config", token, string(good))
		})
	}

	big := func(edit func(c *job.Config)) string {
		c := cfg
		edit(&c)
		// Encode refuses it; write the document by hand.
		return "name: report\ncron: '* * * * * *'\nshardingTotalCount: " + itemsOf(c) +
			"\nshardingItemParameters: '" + c.ShardingItemParameters + "'\njobParameter: '" + c.JobParameter + "'\n"
	}
	for _, tt := range []struct {
		name string
		body string
		code int
		want string
	}{
		{"shardingItemParameters of 1.26 MB", big(func(c *job.Config) {
			c.ShardingTotalCount = 10000
			c.ShardingItemParameters = hostiledoc.ItemParameters(10000, 1_260_000)
		}), http.StatusRequestEntityTooLarge, "shardingItemParameters is "},
		{"jobParameter of 2 MB", big(func(c *job.Config) { c.JobParameter = strings.Repeat("p", 2<<20) }),
			http.StatusRequestEntityTooLarge, "jobParameter is 2,097,152 bytes at line 5: 1,052,672 bytes over the limit of 1,044,480"},
		{"document of 5 MB", "jobParameter: " + strings.Repeat("p", 5<<20), http.StatusRequestEntityTooLarge, "larger than 4194304 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if body := hc.want(tt.code, "POST", "/jobs/report/config", token, tt.body); !strings.Contains(body, tt.want) || len(body) > 2000 {
				t.Errorf("POST: %.2000s does not say %q", body, tt.want)
			}
		})
	}
	if got, _, err := hc.rc.Get(ctx, path); err != nil || string(got) != string(good) {
		t.Fatalf("config node changed: %.200q, %v", got, err)
	}
}

func itemsOf(c job.Config) string {
	b, _ := json.Marshal(c.ShardingTotalCount)
	return string(b)
}
