package jobfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/regcenter"
	_ "github.com/shardjob/shardjob/regcenter/postgres" // a URL of scheme postgres validates
)

// regcenterEnvForTest lists the variables that override the regcenter
// section.
var regcenterEnvForTest = []string{
	"SHARDJOB_REGCENTER_SERVERS", "SHARDJOB_REGCENTER_ETCD", "SHARDJOB_REGCENTER_NAMESPACE", "SHARDJOB_REGCENTER_SESSIONTIMEOUT",
	"SHARDJOB_REGCENTER_CONNECTTIMEOUT", "SHARDJOB_REGCENTER_BASESLEEP", "SHARDJOB_REGCENTER_MAXSLEEP",
	"SHARDJOB_REGCENTER_MAXRETRIES", "SHARDJOB_REGCENTER_DIGEST", "SHARDJOB_REGCENTER_MAXNODEBYTES",
	"SHARDJOB_REGCENTER_DIGESTFILE", "SHARDJOB_REGCENTER_TLS", "SHARDJOB_REGCENTER_TLSCAFILE",
	"SHARDJOB_REGCENTER_TLSCERTFILE", "SHARDJOB_REGCENTER_TLSKEYFILE", "SHARDJOB_REGCENTER_TLSSERVERNAME",
	"SHARDJOB_REGCENTER_TLSINSECURESKIPVERIFY", "SHARDJOB_REGCENTER_EMBEDDEDDIR", "SHARDJOB_REGCENTER_URL",
	"SHARDJOB_REGCENTER_PG",
}

// clearRegcenterEnvForTest keeps the caller's environment out of a test
// (empty variables are ignored by Load).
func clearRegcenterEnvForTest(t *testing.T) {
	t.Helper()
	for _, name := range regcenterEnvForTest {
		t.Setenv(name, "")
	}
}

func TestLoadFileFull(t *testing.T) {
	clearRegcenterEnvForTest(t)
	f, err := jobfile.LoadFile(filepath.Join("testdata", "jobs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantRC := regcenter.Config{
		Servers:        []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		Namespace:      "shop",
		SessionTimeout: 15 * time.Second,
		ConnectTimeout: 3 * time.Second,
		BaseSleep:      100 * time.Millisecond,
		MaxSleep:       2 * time.Second,
		MaxRetries:     5,
		Digest:         "user:pass",
	}
	if !reflect.DeepEqual(f.Regcenter, wantRC) {
		t.Errorf("Regcenter = %+v\nwant %+v", f.Regcenter, wantRC)
	}
	wantJobs := []jobfile.Spec{
		{
			Config: job.Config{
				Name:                   "orders-sync",
				Cron:                   "*/5 * * * * *",
				TimeZone:               "Asia/Shanghai",
				ShardingTotalCount:     4,
				ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen",
				JobParameter:           "full",
				Failover:               true,
				Misfire:                job.MisfireSkip,
				Unmonitored:            true,
				MaxTimeDiff:            5 * time.Second,
				ReconcileInterval:      30 * time.Second,
				ShardingStrategy:       "ROUND_ROBIN",
				Description:            "Copies new orders to the warehouse.",
				Disabled:               true,
				Overwrite:              true,
			},
			Handler: "orders",
		},
		{Config: job.Config{Name: "nightly-report", Cron: "@daily", ShardingTotalCount: 1}},
	}
	if !reflect.DeepEqual(f.Jobs, wantJobs) {
		t.Errorf("Jobs = %+v\nwant %+v", f.Jobs, wantJobs)
	}
	if got := f.Jobs[0].HandlerName(); got != "orders" {
		t.Errorf("HandlerName() = %q, want orders", got)
	}
	if got := f.Jobs[1].HandlerName(); got != "nightly-report" {
		t.Errorf("HandlerName() = %q, want the job's name", got)
	}

	// Each job survives the trip through its ZooKeeper config node.
	for _, s := range f.Jobs {
		data, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := job.DecodeConfig(data)
		if err != nil {
			t.Fatalf("DecodeConfig(%s) = %v", data, err)
		}
		if back != s.Config {
			t.Errorf("round trip of %q gave %+v, want %+v", s.Name, back, s.Config)
		}
	}
}

func TestLoadDefaultsAndEmpty(t *testing.T) {
	clearRegcenterEnvForTest(t)
	f, err := jobfile.Load(strings.NewReader("regcenter:\n  servers: [127.0.0.1:2181]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := regcenter.Config{Servers: []string{"127.0.0.1:2181"}}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("Regcenter = %+v, want the defaults %+v", f.Regcenter, want)
	}
	if f.Jobs == nil || len(f.Jobs) != 0 {
		t.Errorf("Jobs = %#v, want an empty list", f.Jobs)
	}

	f, err = jobfile.Load(strings.NewReader("regcenter:\n  servers: [127.0.0.1:2181]\njobs:\n"))
	if err != nil || len(f.Jobs) != 0 {
		t.Errorf("Load with an empty jobs key = %+v, %v", f, err)
	}
}

func TestLoadAnchorsAndMerge(t *testing.T) {
	clearRegcenterEnvForTest(t)
	f, err := jobfile.Load(strings.NewReader(`
regcenter:
  servers: [127.0.0.1:2181]
jobs:
  - &base
    name: a
    cron: "@hourly"
    shardingTotalCount: 2
    failover: true
  - <<: *base
    name: b
    failover: false
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []jobfile.Spec{
		{Config: job.Config{Name: "a", Cron: "@hourly", ShardingTotalCount: 2, Failover: true}},
		{Config: job.Config{Name: "b", Cron: "@hourly", ShardingTotalCount: 2}},
	}
	if !reflect.DeepEqual(f.Jobs, want) {
		t.Errorf("Jobs = %+v, want %+v", f.Jobs, want)
	}
}

func TestLoadRejectsBadInput(t *testing.T) {
	const rc = "regcenter:\n  servers: [127.0.0.1:2181]\n"
	tests := []struct {
		name    string
		doc     string
		wantIs  []error
		wantMsg []string
	}{
		{"garbage YAML", "regcenter: [\njobs: {{{", nil, []string{"invalid YAML"}},
		{"binary garbage", "\x00\x01\x02\xff", nil, []string{"invalid YAML"}},
		{"top level is a list", "- a\n- b\n", nil, []string{"top level at line 1: must be a mapping"}},
		{"two documents", rc + "---\njobs: []\n", nil, []string{"more than one document"}},
		{"unknown top-level key", rc + "job:\n  - name: a\n", []error{job.ErrUnknownKey},
			[]string{`top level: unknown key "job" at line 3 (did you mean "jobs"?)`}},
		{"top-level key case", rc + "Jobs: []\n", []error{job.ErrUnknownKey}, []string{`unknown key "Jobs" at line 3 (did you mean "jobs"?)`}},
		{"repeated top-level key", rc + "regcenter:\n  servers: [a:1]\n", nil, []string{`top level: key "regcenter" at line 3: repeats the key at line 1`}},
		{"unknown regcenter key", "regcenter:\n  servers: [127.0.0.1:2181]\n  sessionTimeoutMs: 100\n", []error{job.ErrUnknownKey},
			[]string{`regcenter: unknown key "sessionTimeoutMs" at line 3`}},
		{"regcenter key case", "regcenter:\n  servers: [127.0.0.1:2181]\n  SessionTimeout: 5s\n", []error{job.ErrUnknownKey},
			[]string{`regcenter: unknown key "SessionTimeout" at line 3 (did you mean "sessionTimeout"?)`}},
		{"servers and etcd", "regcenter:\n  servers: [127.0.0.1:2181]\n  etcd: [127.0.0.1:2379]\n", []error{regcenter.ErrInvalidConfig},
			[]string{"servers (ZooKeeper) and etcd are both set", "regcenter.servers (ZooKeeper) and regcenter.etcd (etcd) name two registries"}},
		{"etcd not host:port", "regcenter:\n  etcd: [127.0.0.1]\n", []error{regcenter.ErrInvalidConfig},
			[]string{`etcd: "127.0.0.1" is not host:port`}},
		{"etcd typo", "regcenter:\n  etdc: [127.0.0.1:2379]\n", []error{job.ErrUnknownKey},
			[]string{`regcenter: unknown key "etdc" at line 2 (did you mean "etcd"?)`}},
		{"etcd not a list", "regcenter:\n  etcd: {a: b}\n", nil, []string{"etcd at line 2: must be a list of strings, got a mapping"}},
		{"regcenter not a mapping", "regcenter: zk:2181\n", nil, []string{`regcenter at line 1: must be a mapping, got the string "zk:2181"`}},
		{"regcenter bad duration", "regcenter:\n  servers: [127.0.0.1:2181]\n  sessionTimeout: forever\n", nil,
			[]string{`regcenter: sessionTimeout at line 3: "forever" is not a duration`}},
		{"regcenter duration without unit", "regcenter:\n  servers: [127.0.0.1:2181]\n  sessionTimeout: 10\n", nil,
			[]string{`sessionTimeout at line 3: 10 has no unit`}},
		{"regcenter servers mapping", "regcenter:\n  servers: {a: b}\n", nil, []string{"servers at line 2: must be a list of strings, got a mapping"}},
		{"regcenter maxRetries string", "regcenter:\n  servers: [127.0.0.1:2181]\n  maxRetries: many\n", nil,
			[]string{`maxRetries at line 3: "many" is not an integer`}},
		{"regcenter invalid", "regcenter:\n  servers: [127.0.0.1]\n", []error{regcenter.ErrInvalidConfig},
			[]string{`servers: "127.0.0.1" is not host:port`}},
		{"no regcenter", "jobs: []\n", []error{regcenter.ErrInvalidConfig},
			[]string{"servers", "SHARDJOB_REGCENTER_SERVERS"}},
		{"empty file", "", []error{regcenter.ErrInvalidConfig}, []string{"servers"}},
		{"jobs not a list", rc + "jobs:\n  name: a\n", nil, []string{"jobs at line 4: must be a list of jobs, got a mapping"}},
		{"job not a mapping", rc + "jobs:\n  - orders-sync\n", nil, []string{`jobs[0]: job at line 4: must be a mapping`}},
		{"case typo in job key", rc + "jobs:\n  - name: orders-sync\n    cron: '*/5 * * * * *'\n    shardingTotalcount: 4\n",
			[]error{job.ErrUnknownKey},
			[]string{`jobs[0] "orders-sync": unknown key "shardingTotalcount" at line 6 (did you mean "shardingTotalCount"?)`}},
		{"unknown job key", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    retries: 5\n",
			[]error{job.ErrUnknownKey}, []string{`jobs[0] "a": unknown key "retries" at line 7`}},
		{"unknown key in unnamed job", rc + "jobs:\n  - cron: '@hourly'\n    shardingTotalCount: 1\n    nmae: a\n",
			[]error{job.ErrUnknownKey}, []string{`jobs[0]: unknown key "nmae" at line 6 (did you mean "name"?)`}},
		{"repeated job key", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    cron: '@daily'\n",
			nil, []string{`jobs[0] "a": key "cron" at line 7: repeats the key at line 5`}},
		{"invalid cron", rc + "jobs:\n  - name: a\n    cron: 'not a cron'\n    shardingTotalCount: 1\n",
			[]error{job.ErrInvalidCron}, []string{`jobs[0] "a": cron "not a cron" at line 5`}},
		{"five-field cron", rc + "jobs:\n  - name: a\n    cron: '*/5 * * * *'\n    shardingTotalCount: 1\n",
			[]error{job.ErrInvalidCron}, []string{`jobs[0] "a": cron "*/5 * * * *" at line 5: expected exactly 6 fields, found 5`}},
		{"missing cron", rc + "jobs:\n  - name: a\n    shardingTotalCount: 1\n",
			[]error{job.ErrInvalidCron}, []string{`jobs[0] "a": cron is required`}},
		{"bad time zone", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    timeZone: Europe/Atlantis\n    shardingTotalCount: 1\n",
			[]error{job.ErrInvalidTimeZone}, []string{`jobs[0] "a": timeZone "Europe/Atlantis" at line 6: unknown time zone`}},
		{"count zero", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 0\n",
			[]error{job.ErrInvalidShardingCount}, []string{`jobs[0] "a": shardingTotalCount 0 at line 6: must be between 1 and 10000`}},
		{"count negative", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: -1\n",
			[]error{job.ErrInvalidShardingCount}, []string{`jobs[0] "a": shardingTotalCount -1 at line 6`}},
		{"count too big", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 10001\n",
			[]error{job.ErrInvalidShardingCount}, []string{`jobs[0] "a": shardingTotalCount 10001 at line 6`}},
		{"count missing", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n",
			[]error{job.ErrInvalidShardingCount}, []string{`jobs[0] "a": shardingTotalCount 0: must be between`}},
		{"count wrong type", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: [1]\n",
			[]error{job.ErrInvalidShardingCount}, []string{`jobs[0] "a": shardingTotalCount at line 6: must be an integer, got a list`}},
		{"duplicate item", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 4\n    shardingItemParameters: 0=a,0=b\n",
			[]error{job.ErrInvalidItemParameters}, []string{`jobs[0] "a": shardingItemParameters "0=a,0=b" at line 7: item 0 is given more than once`}},
		{"item out of range", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 4\n    shardingItemParameters: 5=x\n",
			[]error{job.ErrInvalidItemParameters}, []string{`jobs[0] "a": shardingItemParameters "5=x" at line 7: entry "5=x": item 5 is outside [0,4)`}},
		{"item not a number", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 4\n    shardingItemParameters: a=b\n",
			[]error{job.ErrInvalidItemParameters}, []string{`item "a" is not a non-negative integer`}},
		{"item without equals", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 4\n    shardingItemParameters: 0a\n",
			[]error{job.ErrInvalidItemParameters}, []string{`entry "0a" has no '='`}},
		{"bad bool", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    failover: maybe\n",
			nil, []string{`jobs[0] "a": failover at line 7: must be true or false, got the string "maybe"`}},
		{"bad duration", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    maxTimeDiff: 5\n",
			nil, []string{`jobs[0] "a": maxTimeDiff at line 7: "5" is not a duration`}},
		{"bad misfire", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    misfire: always\n",
			nil, []string{`jobs[0] "a": misfire "always" at line 7: must be "once" or "skip"`}},
		{"empty handler", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n    handler: ''\n",
			nil, []string{`jobs[0] "a": handler at line 7`}},
		{"bad name", rc + "jobs:\n  - name: a/b\n    cron: '@hourly'\n    shardingTotalCount: 1\n",
			[]error{job.ErrInvalidName}, []string{`jobs[0] "a/b": name "a/b" at line 4: may contain only`}},
		{"duplicate names", rc + "jobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n  - name: b\n    cron: '@hourly'\n    shardingTotalCount: 1\n  - name: a\n    cron: '@daily'\n    shardingTotalCount: 1\n",
			[]error{job.ErrDuplicateJob}, []string{`jobs[2] "a": name "a" at line 10: already used by jobs[0] at line 4`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearRegcenterEnvForTest(t)
			f, err := jobfile.Load(strings.NewReader(tt.doc))
			assertLoadError(t, err, tt.wantIs, tt.wantMsg)
			if f != nil {
				t.Errorf("Load returned %+v with its error", f)
			}
		})
	}
}

// assertLoadError checks that err matches ErrInvalidConfig and every
// sentinel in wantIs and contains every string in wantMsg.
func assertLoadError(t *testing.T, err error, wantIs []error, wantMsg []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wantMsg)
	}
	for _, target := range append([]error{job.ErrInvalidConfig}, wantIs...) {
		if !errors.Is(err, target) {
			t.Errorf("errors.Is(err, %v) = false for:\n%v", target, err)
		}
	}
	for _, m := range wantMsg {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error does not contain %q:\n%v", m, err)
		}
	}
}

func TestLoadFileTypos(t *testing.T) {
	clearRegcenterEnvForTest(t)
	_, err := jobfile.LoadFile(filepath.Join("testdata", "typo.yaml"))
	want := []string{
		`regcenter: unknown key "Namespace" at line 3 (did you mean "namespace"?)`,
		`jobs[0] "orders-sync": unknown key "shardingTotalcount" at line 7 (did you mean "shardingTotalCount"?)`,
		`jobs[1] "stock-sync": unknown key "failOver" at line 11 (did you mean "failover"?)`,
		`jobs[1] "stock-sync": unknown key "retries" at line 12`,
	}
	assertLoadError(t, err, []error{job.ErrUnknownKey}, want)
	if !strings.HasPrefix(err.Error(), filepath.Join("testdata", "typo.yaml")+": ") {
		t.Errorf("error does not start with the file's path: %v", err)
	}
	// Exactly the four typos: the misspelt count is not also "missing".
	var merr interface{ Unwrap() []error }
	if !errors.As(err, &merr) || len(merr.Unwrap()) != len(want) {
		t.Errorf("want %d problems, got:\n%v", len(want), err)
	}
	if strings.Contains(err.Error(), "did you mean \"retries") || strings.Contains(err.Error(), `"retries" at line 12 (`) {
		t.Errorf("suggested a key for a word far from any: %v", err)
	}
}

func TestLoadFileReportsEveryProblem(t *testing.T) {
	clearRegcenterEnvForTest(t)
	_, err := jobfile.LoadFile(filepath.Join("testdata", "invalid.yaml"))
	assertLoadError(t, err,
		[]error{job.ErrInvalidCron, job.ErrInvalidTimeZone, job.ErrInvalidShardingCount, job.ErrInvalidItemParameters, job.ErrDuplicateJob},
		[]string{
			`jobs[0] "orders-sync": cron "*/5 * * *" at line 5: expected exactly 6 fields, found 4`,
			`jobs[0] "orders-sync": timeZone "Mars/Olympus" at line 6`,
			`jobs[0] "orders-sync": shardingTotalCount 0 at line 7`,
			`jobs[1] "stock-sync": cron "*/5 * * * *" at line 9: expected exactly 6 fields, found 5`,
			`jobs[1] "stock-sync": shardingItemParameters "0=a,0=b,5=x" at line 11: item 0 is given more than once`,
			`jobs[1] "stock-sync": shardingItemParameters "0=a,0=b,5=x" at line 11: entry "5=x": item 5 is outside [0,4)`,
			`jobs[2] "orders-sync": shardingTotalCount 10001 at line 14`,
			`jobs[2] "orders-sync": maxTimeDiff at line 15: "soon" is not a duration`,
			`jobs[2] "orders-sync": name "orders-sync" at line 12: already used by jobs[0] at line 4`,
		})
	var merr interface{ Unwrap() []error }
	if !errors.As(err, &merr) || len(merr.Unwrap()) != 9 {
		t.Errorf("want 9 problems, got:\n%v", err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	clearRegcenterEnvForTest(t)
	_, err := jobfile.LoadFile(filepath.Join("testdata", "garbage.yaml"))
	assertLoadError(t, err, nil, []string{"garbage.yaml: ", "invalid YAML"})

	_, err = jobfile.LoadFile(filepath.Join("testdata", "no-such-file.yaml"))
	if !errors.Is(err, os.ErrNotExist) || errors.Is(err, job.ErrInvalidConfig) {
		t.Errorf("LoadFile of a missing file = %v, want os.ErrNotExist only", err)
	}
}

func TestLoadEnvOverrides(t *testing.T) {
	clearRegcenterEnvForTest(t)
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "zk-a:2181, zk-b:2181,")
	t.Setenv("SHARDJOB_REGCENTER_NAMESPACE", "staging")
	t.Setenv("SHARDJOB_REGCENTER_SESSIONTIMEOUT", "20s")
	t.Setenv("SHARDJOB_REGCENTER_MAXRETRIES", "2")
	t.Setenv("SHARDJOB_REGCENTER_DIGEST", "ops:secret")

	f, err := jobfile.LoadFile(filepath.Join("testdata", "jobs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := regcenter.Config{
		Servers:        []string{"zk-a:2181", "zk-b:2181"},
		Namespace:      "staging",
		SessionTimeout: 20 * time.Second,
		ConnectTimeout: 3 * time.Second, // from the file
		BaseSleep:      100 * time.Millisecond,
		MaxSleep:       2 * time.Second,
		MaxRetries:     2,
		Digest:         "ops:secret",
	}
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("Regcenter = %+v\nwant %+v", f.Regcenter, want)
	}
	if len(f.Jobs) != 2 {
		t.Errorf("got %d jobs, want 2", len(f.Jobs))
	}
}

func TestLoadEnvProvidesMissingRegcenter(t *testing.T) {
	clearRegcenterEnvForTest(t)
	path := filepath.Join("testdata", "env-only.yaml")
	if _, err := jobfile.LoadFile(path); !errors.Is(err, regcenter.ErrInvalidConfig) {
		t.Fatalf("LoadFile without servers = %v, want regcenter.ErrInvalidConfig", err)
	}

	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "127.0.0.1:2181")
	f, err := jobfile.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := regcenter.Config{Servers: []string{"127.0.0.1:2181"}}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("Regcenter = %+v, want %+v", f.Regcenter, want)
	}
	if len(f.Jobs) != 1 || f.Jobs[0].Name != "cleanup" {
		t.Errorf("Jobs = %+v", f.Jobs)
	}
}

// TestLoadEtcd: the regcenter section names etcd endpoints, and the
// environment may move a file from one registry to the other.
func TestLoadEtcd(t *testing.T) {
	clearRegcenterEnvForTest(t)
	doc := func(backend string) string {
		return "regcenter:\n  " + backend + "\n  namespace: shop\njobs:\n  - name: a\n    cron: '@hourly'\n    shardingTotalCount: 1\n"
	}
	f, err := jobfile.Load(strings.NewReader(doc("etcd: [etcd-a:2379, etcd-b:2379]")))
	if err != nil {
		t.Fatal(err)
	}
	want := regcenter.Config{Etcd: []string{"etcd-a:2379", "etcd-b:2379"}, Namespace: "shop"}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("Regcenter = %+v, want %+v", f.Regcenter, want)
	}

	// SHARDJOB_REGCENTER_ETCD replaces the file's ZooKeeper servers.
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "env-a:2379, env-b:2379,")
	f, err = jobfile.Load(strings.NewReader(doc("servers: [zk:2181]")))
	if err != nil {
		t.Fatal(err)
	}
	want = regcenter.Config{Etcd: []string{"env-a:2379", "env-b:2379"}, Namespace: "shop"}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("with SHARDJOB_REGCENTER_ETCD: Regcenter = %+v, want %+v", f.Regcenter, want)
	}

	// SHARDJOB_REGCENTER_SERVERS replaces the file's etcd endpoints.
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "zk-env:2181")
	f, err = jobfile.Load(strings.NewReader(doc("etcd: [etcd-a:2379]")))
	if err != nil {
		t.Fatal(err)
	}
	want = regcenter.Config{Servers: []string{"zk-env:2181"}, Namespace: "shop"}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("with SHARDJOB_REGCENTER_SERVERS: Regcenter = %+v, want %+v", f.Regcenter, want)
	}

	// Both variables: refused, naming both.
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "env-a:2379")
	_, err = jobfile.Load(strings.NewReader(doc("etcd: [etcd-a:2379]")))
	assertLoadError(t, err, []error{regcenter.ErrInvalidConfig},
		[]string{"SHARDJOB_REGCENTER_SERVERS and SHARDJOB_REGCENTER_ETCD are both set"})

	// SHARDJOB_REGCENTER_URL replaces the file's servers, and
	// SHARDJOB_REGCENTER_SERVERS the file's url.
	t.Setenv("SHARDJOB_REGCENTER_ETCD", "")
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "")
	t.Setenv("SHARDJOB_REGCENTER_URL", "postgres://shardjob@db-env:5432/jobs")
	f, err = jobfile.Load(strings.NewReader(doc("servers: [zk:2181]")))
	if err != nil {
		t.Fatal(err)
	}
	want = regcenter.Config{URL: "postgres://shardjob@db-env:5432/jobs", Namespace: "shop"}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("with SHARDJOB_REGCENTER_URL: Regcenter = %+v, want %+v", f.Regcenter, want)
	}
	t.Setenv("SHARDJOB_REGCENTER_URL", "")
	t.Setenv("SHARDJOB_REGCENTER_SERVERS", "zk-env:2181")
	f, err = jobfile.Load(strings.NewReader(doc("url: postgres://shardjob@db:5432/jobs")))
	if err != nil {
		t.Fatal(err)
	}
	want = regcenter.Config{Servers: []string{"zk-env:2181"}, Namespace: "shop"}.WithDefaults()
	if !reflect.DeepEqual(f.Regcenter, want) {
		t.Errorf("SHARDJOB_REGCENTER_SERVERS over a file's url: Regcenter = %+v, want %+v", f.Regcenter, want)
	}
}

func TestLoadEnvBadValue(t *testing.T) {
	clearRegcenterEnvForTest(t)
	t.Setenv("SHARDJOB_REGCENTER_SESSIONTIMEOUT", "ten seconds")
	t.Setenv("SHARDJOB_REGCENTER_MAXRETRIES", "lots")
	_, err := jobfile.LoadFile(filepath.Join("testdata", "jobs.yaml"))
	assertLoadError(t, err, nil, []string{
		`regcenter: sessionTimeout: "ten seconds" is not a duration such as "10s" (from environment variable SHARDJOB_REGCENTER_SESSIONTIMEOUT)`,
		`regcenter: maxRetries: "lots" is not an integer (from environment variable SHARDJOB_REGCENTER_MAXRETRIES)`,
	})
}

// TestLoadPostgres: the regcenter section names PostgreSQL with postgres
// (or url, its general name), and SHARDJOB_REGCENTER_PG (or
// SHARDJOB_REGCENTER_URL) does in the environment, replacing the file's
// naming of another registry as the other registry variables do.
func TestLoadPostgres(t *testing.T) {
	const (
		db    = "postgres://shardjob@db:5432/jobs"
		envDB = "postgres://shardjob@db-env:5432/jobs"
	)
	doc := func(lines ...string) string {
		return "regcenter:\n  " + strings.Join(lines, "\n  ") + "\n  namespace: shop\njobs: []\n"
	}
	want := func(c regcenter.Config) *regcenter.Config {
		c.Namespace = "shop"
		c = c.WithDefaults()
		return &c
	}
	for _, tt := range []struct {
		name    string
		doc     string
		env     map[string]string
		want    *regcenter.Config // nil: an error
		wantIs  []error
		wantMsg []string
	}{
		{"postgres key", doc("postgres: " + db), nil, want(regcenter.Config{URL: db}), nil, nil},
		{"postgresql scheme", doc("postgres: postgresql://shardjob@db/jobs"), nil, want(regcenter.Config{URL: "postgresql://shardjob@db/jobs"}), nil, nil},
		{"url key", doc("url: " + db), nil, want(regcenter.Config{URL: db}), nil, nil},
		{"postgres and url alike", doc("url: "+db, "postgres: "+db), nil, want(regcenter.Config{URL: db}), nil, nil},
		{"postgres and url differ", doc("url: "+db, "postgres: "+envDB), nil, nil, nil,
			[]string{"regcenter: postgres at line 3: differs from url at line 2, which sets the same thing; keep one of the two keys"}},
		{"postgres of another scheme", doc("postgres: mysql://db/jobs"), nil, nil, nil,
			[]string{`regcenter: postgres at line 2: has the scheme "mysql", not postgres`}},
		{"postgres not a URL", doc("postgres: db:5432"), nil, nil, nil,
			[]string{"regcenter: postgres at line 2: "}},
		{"postgres a list", doc("postgres: [" + db + "]"), nil, nil, nil,
			[]string{"regcenter: postgres at line 2: must be a string, got a list"}},
		{"postgres with servers", doc("servers: [zk:2181]", "postgres: "+db), nil, nil, []error{regcenter.ErrInvalidConfig},
			[]string{"regcenter.servers (ZooKeeper) and regcenter.postgres (PostgreSQL) name two registries; keep one"}},
		{"postgres with a password", doc("postgres: postgres://shardjob:hunter2@db/jobs"), nil, nil, []error{regcenter.ErrInvalidConfig},
			[]string{"carries a password"}},
		{"postgres misspelt", doc("postgress: " + db), nil, nil, []error{job.ErrUnknownKey},
			[]string{`regcenter: unknown key "postgress" at line 2 (did you mean "postgres"?)`}},
		{"postgres in capitals", doc("Postgres: " + db), nil, nil, []error{job.ErrUnknownKey},
			[]string{`regcenter: unknown key "Postgres" at line 2 (did you mean "postgres"?)`}},
		{"no registry says postgres", "jobs: []\n", nil, nil, []error{regcenter.ErrInvalidConfig},
			[]string{"regcenter.postgres (PostgreSQL)", "SHARDJOB_REGCENTER_PG"}},

		{"PG alone", "jobs: []\n", map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, func() *regcenter.Config {
			c := regcenter.Config{URL: envDB}.WithDefaults()
			return &c
		}(), nil, nil},
		{"PG over servers", doc("servers: [zk:2181]"), map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"PG over etcd", doc("etcd: [etcd:2379]"), map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"PG over an embedded member", doc("embeddedDir: /var/lib/shop"), map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"PG over the file's postgres", doc("postgres: " + db), map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"PG over the file's two URLs", doc("url: "+db, "postgres: "+db), map[string]string{"SHARDJOB_REGCENTER_PG": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"URL over the file's postgres", doc("postgres: " + db), map[string]string{"SHARDJOB_REGCENTER_URL": envDB}, want(regcenter.Config{URL: envDB}), nil, nil},
		{"servers over the file's postgres", doc("postgres: " + db), map[string]string{"SHARDJOB_REGCENTER_SERVERS": "zk-env:2181"},
			want(regcenter.Config{Servers: []string{"zk-env:2181"}}), nil, nil},
		{"etcd over the file's postgres", doc("postgres: " + db), map[string]string{"SHARDJOB_REGCENTER_ETCD": "etcd-env:2379"},
			want(regcenter.Config{Etcd: []string{"etcd-env:2379"}}), nil, nil},
		{"PG of blanks is not set", doc("servers: [zk:2181]"), map[string]string{"SHARDJOB_REGCENTER_PG": "  "},
			want(regcenter.Config{Servers: []string{"zk:2181"}}), nil, nil},
		{"PG and URL", doc("servers: [zk:2181]"), map[string]string{"SHARDJOB_REGCENTER_PG": envDB, "SHARDJOB_REGCENTER_URL": envDB}, nil,
			[]error{regcenter.ErrInvalidConfig}, []string{"regcenter: SHARDJOB_REGCENTER_URL and SHARDJOB_REGCENTER_PG are both set: each names the registry; unset all but one"}},
		{"PG and servers", doc("servers: [zk:2181]"), map[string]string{"SHARDJOB_REGCENTER_PG": envDB, "SHARDJOB_REGCENTER_SERVERS": "zk:2181"}, nil,
			[]error{regcenter.ErrInvalidConfig}, []string{"SHARDJOB_REGCENTER_SERVERS and SHARDJOB_REGCENTER_PG are both set"}},
		{"PG, etcd and an embedded member", doc("servers: [zk:2181]"),
			map[string]string{"SHARDJOB_REGCENTER_PG": envDB, "SHARDJOB_REGCENTER_ETCD": "e:2379", "SHARDJOB_REGCENTER_EMBEDDEDDIR": "/d"}, nil,
			[]error{regcenter.ErrInvalidConfig}, []string{"SHARDJOB_REGCENTER_ETCD, SHARDJOB_REGCENTER_EMBEDDEDDIR and SHARDJOB_REGCENTER_PG are all set"}},
		{"PG of another scheme", doc("servers: [zk:2181]"), map[string]string{"SHARDJOB_REGCENTER_PG": "mysql://db/jobs"}, nil, nil,
			[]string{`regcenter: postgres: has the scheme "mysql", not postgres: name a registry of another kind with url (from environment variable SHARDJOB_REGCENTER_PG)`}},
		{"PG with a password", "jobs: []\n", map[string]string{"SHARDJOB_REGCENTER_PG": "postgres://shardjob:hunter2@db/jobs"}, nil,
			[]error{regcenter.ErrInvalidConfig}, []string{"carries a password"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearRegcenterEnvForTest(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f, err := jobfile.Load(strings.NewReader(tt.doc))
			if tt.want == nil {
				assertLoadError(t, err, tt.wantIs, tt.wantMsg)
				if err != nil && strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.Regcenter, *tt.want) {
				t.Errorf("Regcenter = %+v\nwant %+v", f.Regcenter, *tt.want)
			}
		})
	}
}
