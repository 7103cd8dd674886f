package jobhttp_test

import (
	"encoding/json"
	"testing"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/testing/pgtest"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // regcenter.Open serves postgres:// URLs
)

// onPostgres starts a PostgreSQL server for t (closed when it ends) and
// returns a config naming a fresh database of it.
func onPostgres(t *testing.T) regcenter.Config {
	t.Helper()
	url := pgtest.NewDatabaseT(t)
	return regcenter.Config{URL: url}
}

// TestPostgresAPISmoke is TestEtcdAPISmoke on PostgreSQL: the job list, a
// job's status, and a trigger that runs every item once.
func TestPostgresAPISmoke(t *testing.T) {
	const token = "s3cr3t-token"
	hc := newHTTPClusterOn(t, job.Config{Name: "report", Cron: "0 0 0 1 1 *", ShardingTotalCount: 4}, token, onPostgres(t))
	httpWaitFor(t, "both instances online", func() bool {
		var jobs []admin.JobSummary
		if err := json.Unmarshal([]byte(hc.want(200, "GET", "/jobs", "", "")), &jobs); err != nil {
			t.Fatal(err)
		}
		return len(jobs) == 1 && jobs[0].Name == "report" && jobs[0].Online == 2
	})
	hc.want(401, "POST", "/jobs/report/trigger", "", "")
	hc.want(200, "POST", "/jobs/report/trigger", token, "")
	httpWaitFor(t, "the triggered items", func() bool { return hc.triggered("a1")+hc.triggered("a2") == 4 })
	st := hc.status()
	if st.Name != "report" || len(st.Servers) != 2 || len(st.Items) != 4 {
		t.Errorf("GET /jobs/report: %+v", st)
	}
	hc.want(404, "GET", "/jobs/nope", "", "")
}

func TestPostgresCreateAnswersOnlyForWhatAFollowerRuns(t *testing.T) {
	testCreateAnswersOnlyForWhatAFollowerRuns(t, onPostgres(t))
}

func TestPostgresCreateKeepsTheLimitsOnDefinitions(t *testing.T) {
	testCreateKeepsTheLimitsOnDefinitions(t, onPostgres(t))
}
