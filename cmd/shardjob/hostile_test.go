package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/testing/hostiledoc"
)

// TestAdminHostileConfig: the command neither crashes nor hangs on a
// hostile document, whether given to config set or found in the node by
// config get, jobs and status; oversized configs are refused by field.
func TestAdminHostileConfig(t *testing.T) {
	t.Parallel()
	c := newCluster(t, everySecond("orders"), "")
	c.warmUp()
	before := c.mustCLI("config", "get", "orders")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, doc := range []struct {
		name string
		data []byte
		want string
	}{
		{"self merge", hostiledoc.SelfMerge("orders"), hostiledoc.StoredSelfMergeError},
		{"merge chain", hostiledoc.MergeChain("orders", 40), hostiledoc.StoredMergeChainError},
	} {
		t.Run(doc.name, func(t *testing.T) {
			file := writeFile(t, "hostile.yaml", string(doc.data))
			c.wantFail(exitUsage, []string{"hostile.yaml", doc.want}, "config", "set", "orders", file)
			if after := c.mustCLI("config", "get", "orders"); after != before {
				t.Fatalf("a refused config was written:\n%s", after)
			}

			// Straight into the node, past the command's validation.
			if _, err := c.inst["s1"].rc.Set(ctx, layout.Job("orders").Config(), doc.data, -1); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Document    string `json:"document"`
				ConfigError string `json:"configError"`
			}
			if err := json.Unmarshal([]byte(c.mustCLI("config", "get", "orders", "-o", "json")), &got); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.ConfigError, doc.want) || got.Document != string(doc.data) {
				t.Errorf("config get -o json: %+v, want configError saying %q", got, doc.want)
			}
			if out := c.mustCLI("config", "get", "orders"); out != string(doc.data) {
				t.Errorf("config get prints %q, want the stored document", out)
			}
			if out := c.mustCLI("jobs"); !strings.Contains(out, "orders: config node rejected") || !strings.Contains(out, doc.want) {
				t.Errorf("jobs does not report the rejection:\n%s", out)
			}
			if out := c.mustCLI("status", "orders"); !strings.Contains(out, doc.want) {
				t.Errorf("status does not report the rejection:\n%s", out)
			}
			c.rec.waitFires(t, time.Now().Add(time.Second), 1, allSix)

			good := writeFile(t, "good.yaml", before)
			c.mustCLI("config", "set", "orders", good)
		})
	}

	items := writeFile(t, "items.yaml", "name: orders\ncron: '* * * * * *'\nshardingTotalCount: 10000\nshardingItemParameters: "+
		hostiledoc.ItemParameters(10000, 1_260_000)+"\n")
	c.wantFail(exitUsage, []string{"items.yaml", "shardingItemParameters is ", "bytes over the limit of 1,044,480"}, "config", "set", "orders", items)
	param := writeFile(t, "param.yaml", "name: orders\ncron: '* * * * * *'\nshardingTotalCount: 6\njobParameter: "+strings.Repeat("p", 2<<20)+"\n")
	c.wantFail(exitUsage, []string{"param.yaml", "jobParameter is 2,097,152 bytes at line 4: 1,052,672 bytes over the limit of 1,044,480"}, "config", "set", "orders", param)
	if after := c.mustCLI("config", "get", "orders"); after != before {
		t.Fatalf("a refused config was written:\n%s", after)
	}
}
