package jobhttp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
)

// The placement endpoints: instances is readable without the token; drain,
// undrain and rebalance need it; drain?wait answers once the server is
// drained; bad input is refused and changes nothing.
func TestHTTPPlacement(t *testing.T) {
	cfg := job.Config{Name: "orders", Cron: "* * * * * *", ShardingTotalCount: 4}
	hc := newHTTPCluster(t, cfg, "s3cr3t")
	var p admin.Placement
	httpWaitFor(t, "both instances to hold units", func() bool {
		code, body := hc.do(http.MethodGet, "/instances", "", "")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &p) != nil {
			return false
		}
		return p.Units == 4 && len(p.Instances) == 2 && p.Instances[0].Units == 2
	})

	hc.want(http.StatusUnauthorized, http.MethodPost, "/servers/a2/drain", "", "")
	hc.want(http.StatusUnauthorized, http.MethodPost, "/rebalance", "wrong", "")
	hc.want(http.StatusBadRequest, http.MethodPost, "/servers/a2/drain?wait=forever", "s3cr3t", "")
	if l, err := job.Draining(t.Context(), hc.rc); err != nil || len(l) != 0 {
		t.Fatalf("refused requests drained %v (%v)", l, err)
	}

	body := hc.want(http.StatusOK, http.MethodPost, "/servers/a2/drain?wait=30s", "s3cr3t", "")
	if !strings.Contains(body, `"drained": true`) {
		t.Fatalf("drain answer: %s", body)
	}
	// The answer came once a2 held no units and ran no items; its own
	// report that it is drained follows when it sees its empty assignment.
	httpWaitFor(t, "a2 to report itself drained", func() bool {
		_, body := hc.do(http.MethodGet, "/instances", "", "")
		if json.Unmarshal([]byte(body), &p) != nil {
			return false
		}
		for _, in := range p.Instances {
			if in.Server == "a2" {
				if in.Units != 0 {
					t.Fatalf("a2 holds units after the drain answered: %+v", in)
				}
				return in.Drained
			}
		}
		return false
	})
	hc.want(http.StatusOK, http.MethodPost, "/servers/a2/undrain", "s3cr3t", "")
	httpWaitFor(t, "a2 to hold units again", func() bool {
		_, body := hc.do(http.MethodGet, "/instances", "", "")
		if json.Unmarshal([]byte(body), &p) != nil {
			return false
		}
		for _, in := range p.Instances {
			if in.Server == "a2" {
				return in.Units == 2 && !in.Draining
			}
		}
		return false
	})
	if body := hc.want(http.StatusOK, http.MethodPost, "/rebalance", "s3cr3t", ""); !strings.Contains(body, `"jobs": 1`) {
		t.Errorf("rebalance answer: %s", body)
	}
}
