package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

var zc *zktest.Cluster

func TestMain(m *testing.M) {
	os.Exit(zktest.RunTests(m, &zc))
}

var nsSeq atomic.Int64

// codec decodes config nodes as the shardjob command does.
var codec = admin.JobCodec(false)

// fixture is a namespace with two sessions: one for the administrator, one
// standing in for the instances (whose ephemeral nodes it owns).
type fixture struct {
	t    testing.TB
	ctx  context.Context
	adm  *admin.Admin
	rc   *zookeeper.Center // the administrator's
	inst *zookeeper.Center // the "instances'"
	ns   string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	ns := fmt.Sprintf("adm%d-%d", os.Getpid(), nsSeq.Add(1))
	connect := func() *zookeeper.Center {
		rc, err := zookeeper.Open(ctx, regcenter.Config{Servers: zc.Servers(), Namespace: ns, SessionTimeout: 4 * time.Second},
			regcenter.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}
	f := &fixture{t: t, ctx: ctx, ns: ns, rc: connect(), inst: connect()}
	f.adm = admin.New(f.rc, codec)
	return f
}

func (f *fixture) create(p, data string, mode regcenter.Mode) {
	f.t.Helper()
	rc := f.rc
	if mode == regcenter.Ephemeral {
		rc = f.inst
	}
	if _, err := rc.Create(f.ctx, p, []byte(data), mode); err != nil {
		f.t.Fatalf("create %s: %v", p, err)
	}
}

func (f *fixture) exists(p string) bool {
	f.t.Helper()
	ok, _, err := f.rc.Exists(f.ctx, p)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

func (f *fixture) data(p string) string {
	f.t.Helper()
	b, _, err := f.rc.Get(f.ctx, p)
	if err != nil {
		f.t.Fatalf("get %s: %v", p, err)
	}
	return string(b)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const reportDoc = "name: report\ncron: \"0 * * * * *\"\nshardingTotalCount: 4\nfailover: true\n"

// job builds a job by hand: s1 online and leading with items 0,1; s2
// crashed holding 2,3; s3 online, disabled, paused, with a trigger pending.
func (f *fixture) job() layout.Job {
	p := layout.Job("report")
	f.create(p.Config(), reportDoc, regcenter.Persistent)
	f.create(p.Flag("s1", layout.Status), layout.StatusRunning, regcenter.Ephemeral)
	f.create(p.Flag("s1", layout.Sharding), "0,1", regcenter.Persistent)
	f.create(p.Flag("s2", layout.Sharding), "2,3", regcenter.Persistent)
	f.create(p.Flag("s3", layout.Status), layout.StatusReady, regcenter.Ephemeral)
	f.create(p.Flag("s3", layout.Sharding), "", regcenter.Persistent)
	for _, fl := range []string{layout.Disabled, layout.Paused, layout.Trigger} {
		f.create(p.Flag("s3", fl), "", regcenter.Persistent)
	}
	f.create(p.ElectionHost(), "s1", regcenter.Ephemeral)
	f.create(p.Necessary(), "", regcenter.Persistent)
	f.create(p.DisabledItems(), "3", regcenter.Persistent)
	f.create(p.ItemNode(0, layout.Running), mustJSON(map[string]any{"server": "s1", "fire": 1_700_000_060_000, "kind": "fire", "begin": 1_700_000_060_010, "session": "x"}), regcenter.Ephemeral)
	f.create(p.ItemNode(1, layout.Completed), mustJSON(map[string]any{"server": "s1", "fire": 1_700_000_000_000, "kind": "fire", "begin": 1_700_000_000_005, "end": 1_700_000_000_250, "error": "boom"}), regcenter.Persistent)
	// Held between runs: s1 made the mark at an earlier fire, and the
	// record says its run (and a later one) completed.
	f.create(p.ItemNode(1, layout.Running), mustJSON(map[string]any{"server": "s1", "fire": 1_699_999_940_000, "kind": "fire", "begin": 1_699_999_940_001, "session": "x"}), regcenter.Ephemeral)
	f.create(p.ItemNode(2, layout.Completed), mustJSON(map[string]any{"server": "s2", "fire": 1_700_000_060_000, "since": 1_700_000_000_000, "kind": "misfire", "begin": 1_700_000_060_001, "end": 1_700_000_060_002}), regcenter.Persistent)
	f.create(p.ItemNode(2, layout.Misfire), mustJSON(map[string]any{"since": 1_700_000_120_000}), regcenter.Persistent)
	entry, _ := json.Marshal(failover.Entry{Fire: 1_700_000_120_000, From: "s2"})
	f.create(p.FailoverItem(2), string(entry), regcenter.Persistent)
	f.create(p.ItemNode(2, layout.Failover), "s1", regcenter.Ephemeral)
	f.create(p.FailoverItem(3), string(entry), regcenter.Persistent)
	return p
}

func TestAdminStatus(t *testing.T) {
	f := newFixture(t)
	p := f.job()
	f.create("/.clock", "s1", regcenter.Persistent) // internal: not a job

	jobs, err := f.adm.Jobs(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("Jobs: %+v", jobs)
	}
	j := jobs[0]
	if j.Name != "report" || j.Status != admin.StatusCrashed || j.Online != 2 || j.Registered != 3 || j.Leader != "s1" ||
		j.Cron != "0 * * * * *" || j.ShardingTotalCount != 4 || j.LastFire == nil || j.LastFire.UnixMilli() != 1_700_000_060_000 ||
		j.NextFire == nil || j.NextFire.Second() != 0 || !j.NextFire.After(time.Now()) {
		t.Errorf("Jobs: %+v", j)
	}

	st, err := f.adm.Status(f.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resharding || !st.Failover || !slices.Equal(st.DisabledItems, []int{3}) || len(st.Servers) != 3 || len(st.Items) != 4 {
		t.Fatalf("Status: %+v", st)
	}
	s1, s2, s3 := st.Servers[0], st.Servers[1], st.Servers[2]
	if !s1.Online || s1.State != "RUNNING" || !s1.Leader || !slices.Equal(s1.Items, []int{0, 1}) || !slices.Equal(s1.Running, []int{0}) {
		t.Errorf("s1: %+v", s1)
	}
	if s2.Online || s2.Leader || !slices.Equal(s2.Items, []int{2, 3}) || len(s2.Running) != 0 {
		t.Errorf("s2: %+v", s2)
	}
	if !s3.Online || !s3.Disabled || !s3.Paused || !s3.TriggerPending || s3.ShutdownPending || len(s3.Items) != 0 {
		t.Errorf("s3: %+v", s3)
	}
	i0, i1, i2, i3 := st.Items[0], st.Items[1], st.Items[2], st.Items[3]
	if i0.Server != "s1" || i0.Running == nil || i0.Running.Server != "s1" || i0.Running.Kind != "fire" || i0.Last != nil {
		t.Errorf("item 0: %+v", i0)
	}
	if i1.Last == nil || i1.Last.Error != "boom" || i1.Last.DurationMS != 245 || i1.Last.Server != "s1" || i1.Running != nil || i1.HeldBy != "s1" || i0.HeldBy != "" {
		t.Errorf("item 1: %+v %+v", i1, i1.Last)
	}
	if i2.Server != "s2" || i2.MisfireSince == nil || i2.MisfireSince.UnixMilli() != 1_700_000_120_000 ||
		i2.Failover == nil || i2.Failover.From != "s2" || i2.Failover.ClaimedBy != "s1" || i2.Last.Kind != "misfire" ||
		i2.Last.Since == nil || i2.Last.Since.UnixMilli() != 1_700_000_000_000 || i1.Last.Since != nil {
		t.Errorf("item 2: %+v %+v", i2, i2.Failover)
	}
	if !i3.Disabled || i3.Failover == nil || i3.Failover.ClaimedBy != "" || i3.Last != nil {
		t.Errorf("item 3: %+v", i3)
	}

	// The status word, from the most alarming down.
	status := func() string {
		t.Helper()
		st, err := f.adm.Status(f.ctx, "report")
		if err != nil {
			t.Fatal(err)
		}
		return st.Status
	}
	if _, err := f.rc.Set(f.ctx, p.Flag("s2", layout.Sharding), nil, -1); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != admin.StatusResharding {
		t.Errorf("with the necessary flag: %q", got)
	}
	if err := f.rc.Delete(f.ctx, p.Necessary(), -1); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != admin.StatusOK {
		t.Errorf("steady: %q", got)
	}
	if _, err := f.adm.Disable(f.ctx, "s1", "report"); err != nil {
		t.Fatal(err)
	}
	if err := f.rc.Delete(f.ctx, p.Necessary(), -1); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != admin.StatusDisabled {
		t.Errorf("every online server disabled: %q", got)
	}
	if _, err := f.adm.Enable(f.ctx, "s1", "report"); err != nil {
		t.Fatal(err)
	}
	if err := f.rc.Delete(f.ctx, p.Necessary(), -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.adm.ConfigSet(f.ctx, "report", []byte(reportDoc+"disabled: true\n")); err != nil {
		t.Fatal(err)
	}
	st, err = f.adm.Status(f.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != admin.StatusDisabled || !st.Disabled || st.NextFire != nil {
		t.Errorf("config disabled: %q, next fire %v", st.Status, st.NextFire)
	}

	// A pause in the config: shown with its note, and the next fire is
	// after it.
	until := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	if _, _, err := f.adm.ConfigSet(f.ctx, "report", []byte(reportDoc+"pausedUntil: "+until.Format(time.RFC3339)+"\npauseNote: warehouse move\n")); err != nil {
		t.Fatal(err)
	}
	st, err = f.adm.Status(f.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if st.PausedUntil == nil || !st.PausedUntil.Equal(until) || st.PauseNote != "warehouse move" || st.NextFire == nil || st.NextFire.Before(until) {
		t.Errorf("paused: until %v (%q), next fire %v", st.PausedUntil, st.PauseNote, st.NextFire)
	}

	// Garbage in the config node is reported, not fatal.
	if _, err := f.rc.Set(f.ctx, p.Config(), []byte("cron: ["), -1); err != nil {
		t.Fatal(err)
	}
	jobs, err = f.adm.Jobs(f.ctx)
	if err != nil || len(jobs) != 1 || !strings.Contains(jobs[0].ConfigError, "invalid YAML") || jobs[0].Cron != "" || jobs[0].NextFire != nil {
		t.Errorf("garbage config: %+v %v", jobs, err)
	}

	if _, err := f.adm.Status(f.ctx, "nope"); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
}

func TestAdminDump(t *testing.T) {
	f := newFixture(t)
	p := layout.Job("d")
	f.create(p.Config(), "name: d\n", regcenter.Persistent)
	for _, it := range []int{10, 2, 1} {
		f.create(p.ItemNode(it, layout.Completed), "{}", regcenter.Persistent)
	}
	f.create(p.Flag("s1", layout.Status), "READY", regcenter.Ephemeral)
	d, err := f.adm.Dump(f.ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, n := range d.Nodes {
		paths = append(paths, n.Path)
		if n.Path == p.Flag("s1", layout.Status) && (n.EphemeralOwner == "" || n.Data != "READY") {
			t.Errorf("status node: %+v", n)
		}
	}
	want := []string{"/d", "/d/config", "/d/execution", "/d/execution/1", "/d/execution/1/completed", "/d/execution/2",
		"/d/execution/2/completed", "/d/execution/10", "/d/execution/10/completed", "/d/servers", "/d/servers/s1", "/d/servers/s1/status"}
	if !slices.Equal(paths, want) {
		t.Errorf("dump order:\n got %v\nwant %v", paths, want)
	}
	if d.Namespace != "/"+f.ns || d.Job != "d" {
		t.Errorf("dump header: %q %q", d.Namespace, d.Job)
	}
	if _, err := f.adm.Dump(f.ctx, "nope"); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
}

func TestAdminServerOperations(t *testing.T) {
	f := newFixture(t)
	p := f.job()
	other := layout.Job("other")
	f.create(other.Config(), "name: other\ncron: \"@hourly\"\nshardingTotalCount: 1\n", regcenter.Persistent)
	f.create(other.Flag("s1", layout.Status), "READY", regcenter.Ephemeral)
	if err := f.rc.Delete(f.ctx, p.Necessary(), -1); err != nil {
		t.Fatal(err)
	}

	// Disable in one job: the flag and a reshard, together.
	ch, err := f.adm.Disable(f.ctx, "s1", "report")
	if err != nil || len(ch) != 1 || ch[0] != (admin.Change{Job: "report", Server: "s1", Changed: true}) {
		t.Fatalf("Disable: %+v %v", ch, err)
	}
	if !f.exists(p.Flag("s1", layout.Disabled)) || !f.exists(p.Necessary()) {
		t.Errorf("Disable wrote no flag or no reshard request")
	}
	if ch, err := f.adm.Disable(f.ctx, "s1", "report"); err != nil || ch[0].Changed {
		t.Errorf("second Disable: %+v %v", ch, err)
	}
	// Every job of the server.
	ch, err = f.adm.Pause(f.ctx, "s1", "")
	if err != nil || len(ch) != 2 || ch[0].Job != "other" || ch[1].Job != "report" {
		t.Errorf("Pause everywhere: %+v %v", ch, err)
	}
	if !f.exists(other.Flag("s1", layout.Paused)) || !f.exists(p.Flag("s1", layout.Paused)) {
		t.Errorf("Pause everywhere missed a job")
	}
	if ch, err := f.adm.Resume(f.ctx, "s1", ""); err != nil || len(ch) != 2 || !ch[0].Changed {
		t.Errorf("Resume: %+v %v", ch, err)
	}
	if ch, err := f.adm.Enable(f.ctx, "s1", ""); err != nil || len(ch) != 2 || ch[0].Changed || !ch[1].Changed {
		t.Errorf("Enable everywhere: %+v %v", ch, err)
	}
	if f.exists(p.Flag("s1", layout.Disabled)) || f.exists(p.Flag("s1", layout.Paused)) {
		t.Errorf("flags left after Enable and Resume")
	}

	// Shutdown needs the instance online.
	if _, err := f.adm.Shutdown(f.ctx, "s2", "report"); !errors.Is(err, admin.ErrNotOnline) {
		t.Errorf("Shutdown of offline s2: %v", err)
	}
	if ch, err := f.adm.Shutdown(f.ctx, "s3", ""); err != nil || len(ch) != 1 || ch[0].Job != "report" {
		t.Errorf("Shutdown s3: %+v %v", ch, err)
	}
	if err := f.adm.WaitOffline(f.ctx, "s3", []string{"report"}, 200*time.Millisecond); !errors.Is(err, admin.ErrStillOnline) {
		t.Errorf("WaitOffline while s3 is online: %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = f.inst.Delete(context.Background(), p.Flag("s3", layout.Status), -1)
	}()
	if err := f.adm.WaitOffline(f.ctx, "s3", []string{"report"}, 10*time.Second); err != nil {
		t.Errorf("WaitOffline after s3 left: %v", err)
	}

	// Unknown names.
	for _, err := range []error{
		func() error { _, err := f.adm.Disable(f.ctx, "s9", "report"); return err }(),
		func() error { _, err := f.adm.Pause(f.ctx, "s9", ""); return err }(),
		func() error { _, err := f.adm.Trigger(f.ctx, "report", "s9"); return err }(),
	} {
		if !errors.Is(err, admin.ErrUnknownServer) {
			t.Errorf("unknown server: %v", err)
		}
	}
	if _, err := f.adm.Resume(f.ctx, "s1", "nope"); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := f.adm.Disable(f.ctx, "a/b", ""); !errors.Is(err, admin.ErrInvalid) {
		t.Errorf("bad server name: %v", err)
	}
}

func TestAdminTrigger(t *testing.T) {
	f := newFixture(t)
	p := f.job() // s1 online; s2 offline; s3 online with a trigger pending
	ch, err := f.adm.Trigger(f.ctx, "report", "")
	want := []admin.Change{{Job: "report", Server: "s1", Changed: true}, {Job: "report", Server: "s3", Changed: false}}
	if err != nil || !slices.Equal(ch, want) {
		t.Errorf("Trigger: %+v %v, want %+v", ch, err, want)
	}
	if !f.exists(p.Flag("s1", layout.Trigger)) || f.exists(p.Flag("s2", layout.Trigger)) {
		t.Errorf("trigger flags: s1 %v, s2 %v", f.exists(p.Flag("s1", layout.Trigger)), f.exists(p.Flag("s2", layout.Trigger)))
	}
	if _, err := f.adm.Trigger(f.ctx, "report", "s2"); !errors.Is(err, admin.ErrNotOnline) {
		t.Errorf("Trigger offline s2: %v", err)
	}
	if err := f.rc.Delete(f.ctx, p.Flag("s1", layout.Trigger), -1); err != nil {
		t.Fatal(err)
	}
	if ch, err := f.adm.Trigger(f.ctx, "report", "s1"); err != nil || len(ch) != 1 || !ch[0].Changed {
		t.Errorf("Trigger s1: %+v %v", ch, err)
	}
	// Nobody online.
	f.inst.Close()
	if _, err := f.adm.Trigger(f.ctx, "report", ""); !errors.Is(err, admin.ErrNotOnline) {
		t.Errorf("Trigger with nobody online: %v", err)
	}
}

func TestAdminConfigSet(t *testing.T) {
	f := newFixture(t)
	p := f.job()
	before := f.data(p.Config())
	for _, tc := range []struct {
		doc, want string
	}{
		{"name: report\ncron: \"* * *\"\nshardingTotalCount: 4\n", `cron "* * *" at line 2`},
		{"name: report\ncron: \"@hourly\"\nshardingTotalcount: 4\n", `unknown key "shardingTotalcount" at line 3`},
		{"cron: [", "invalid YAML"},
		{"", "empty"},
		{"name: other\ncron: \"@hourly\"\nshardingTotalCount: 4\n", `names job "other"`},
	} {
		_, _, err := f.adm.ConfigSet(f.ctx, "report", []byte(tc.doc))
		if !errors.Is(err, admin.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ConfigSet(%q): %v, want ErrInvalid mentioning %q", tc.doc, err, tc.want)
		}
	}
	if after := f.data(p.Config()); after != before {
		t.Errorf("refused documents were written: %q", after)
	}
	cfg, changed, err := f.adm.ConfigSet(f.ctx, "report", []byte("# comment\nname: report\ncron: \"@hourly\"\nshardingTotalCount: 8\n"))
	if err != nil || !changed || cfg.ShardingTotalCount != 8 {
		t.Fatalf("ConfigSet: %+v %v %v", cfg, changed, err)
	}
	stored := f.data(p.Config())
	if strings.Contains(stored, "comment") || !strings.Contains(stored, "shardingTotalCount: 8") || !strings.Contains(stored, "monitorExecution: true") {
		t.Errorf("stored document is not canonical:\n%s", stored)
	}
	if _, changed, err := f.adm.ConfigSet(f.ctx, "report", []byte(stored)); err != nil || changed {
		t.Errorf("same document again: changed %v, %v", changed, err)
	}
	got, err := f.adm.ConfigGet(f.ctx, "report")
	if err != nil || string(got) != stored {
		t.Errorf("ConfigGet: %q %v", got, err)
	}
	if _, _, err := f.adm.ConfigSet(f.ctx, "nope", []byte(stored)); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("ConfigSet unknown job: %v", err)
	}
}

func TestAdminDisabledItems(t *testing.T) {
	f := newFixture(t)
	p := f.job() // 4 items, 3 disabled
	got, err := f.adm.DisableItems(f.ctx, "report", []int{1, 0, 1})
	if err != nil || !slices.Equal(got, []int{0, 1, 3}) || f.data(p.DisabledItems()) != "0,1,3" {
		t.Errorf("DisableItems: %v %v", got, err)
	}
	for _, items := range [][]int{{4}, {-1}, nil} {
		if _, err := f.adm.DisableItems(f.ctx, "report", items); !errors.Is(err, admin.ErrInvalid) {
			t.Errorf("DisableItems(%v): %v", items, err)
		}
	}
	got, err = f.adm.EnableItems(f.ctx, "report", []int{0, 1, 3, 2})
	if err != nil || len(got) != 0 || f.exists(p.DisabledItems()) {
		t.Errorf("EnableItems of all: %v %v, node exists %v", got, err, f.exists(p.DisabledItems()))
	}
	// Garbage in the node is replaced.
	f.create(p.DisabledItems(), "x,y", regcenter.Persistent)
	if got, err := f.adm.DisableItems(f.ctx, "report", []int{2}); err != nil || !slices.Equal(got, []int{2}) {
		t.Errorf("DisableItems over garbage: %v %v", got, err)
	}
	if _, err := f.adm.EnableItems(f.ctx, "nope", []int{1}); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
}

func TestAdminRemove(t *testing.T) {
	f := newFixture(t)
	p := f.job()
	// s1 and s3 stay "online": the removal gives up, config already gone.
	res, err := f.adm.Remove(f.ctx, "report", 300*time.Millisecond, false)
	if !errors.Is(err, admin.ErrStillOnline) || !strings.Contains(err.Error(), "s1, s3 still online") {
		t.Errorf("Remove with instances online: %v", err)
	}
	if res.Job != "report" || !slices.Equal(res.Stopped, []string{"s1", "s3"}) {
		t.Errorf("Remove: %+v", res)
	}
	if f.exists(p.Config()) || !f.exists(p.Root()) {
		t.Errorf("after a timed-out remove: config %v, root %v", f.exists(p.Config()), f.exists(p.Root()))
	}
	// The instances leave (their session ends); now it completes.
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.inst.Close()
	}()
	if _, err := f.adm.Remove(f.ctx, "report", 20*time.Second, false); err != nil {
		t.Fatal(err)
	}
	if f.exists(p.Root()) {
		t.Errorf("job node left after Remove")
	}
	if _, err := f.adm.Remove(f.ctx, "report", time.Second, false); !errors.Is(err, admin.ErrUnknownJob) {
		t.Errorf("second Remove: %v", err)
	}
}

func TestAdminStatusReportsProblems(t *testing.T) {
	f := newFixture(t)
	p := f.job()
	st, err := f.adm.Status(f.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 0 {
		t.Fatalf("problems in a sound job: %q", st.Problems)
	}

	f.create(p.Flag("ghost", layout.Status), layout.StatusReady, regcenter.Persistent)
	f.create(p.Flag("s4", layout.Sharding), "x,y", regcenter.Persistent)
	if err := f.rc.Delete(f.ctx, p.ItemNode(1, layout.Running), -1); err != nil { // s1's held mark, replaced by hand
		t.Fatal(err)
	}
	f.create(p.ItemNode(1, layout.Running), "stuck", regcenter.Persistent)
	f.create(p.FailoverItems()+"/banana", "", regcenter.Persistent)
	if _, err := f.rc.Set(f.ctx, p.FailoverItem(3), []byte("\x00"), -1); err != nil {
		t.Fatal(err)
	}
	f.create(p.ItemNode(3, layout.Running), mustJSON(map[string]any{"server": "s2", "fire": 1, "kind": "fire", "begin": 1}), regcenter.Ephemeral)
	st, err = f.adm.Status(f.ctx, "report")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`failover queue: entry "banana" names no item`,
		`failover queue: item 3 has an unreadable entry`,
		`item 1: persistent running node`,
		`item 3: running node of server s2, which is offline`,
		`server ghost: persistent status node`,
		`server s4: garbage assignment "x,y"`,
	}
	if len(st.Problems) != len(want) {
		t.Fatalf("problems %q, want %d", st.Problems, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(st.Problems[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, st.Problems[i], w)
		}
	}
}

// A job that runs after others shows where its parents stand: each one's
// status and last fire; a parent not in the namespace reads "gone".
func TestAdminStatusShowsParents(t *testing.T) {
	f := newFixture(t)
	f.job()
	p := layout.Job("digest")
	f.create(p.Config(), "name: digest\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nafter: [report, archive]\n", regcenter.Persistent)
	st, err := f.adm.Status(f.ctx, "digest")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Parents) != 2 || st.Parents[0].Name != "report" || st.Parents[0].LastFire == nil ||
		!st.Parents[0].LastFire.Equal(time.UnixMilli(1_700_000_060_000)) || st.Parents[1].Name != "archive" || st.Parents[1].Status != "gone" {
		t.Fatalf("parents %+v", st.Parents)
	}
	if !slices.Equal(st.After, []string{"report", "archive"}) {
		t.Fatalf("after %v", st.After)
	}
}

// A job that others run after is not removed unless forced: the refusal
// names them and changes nothing. The dependent's status says when its
// parent is gone.
func TestAdminRemoveRefusesAParentWithDependents(t *testing.T) {
	f := newFixture(t)
	p := f.job() // "report"
	c := layout.Job("summary")
	f.create(c.Root(), "", regcenter.Persistent)
	f.create(c.Config(), "name: summary\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nafter: [report]\n", regcenter.Persistent)
	f.inst.Close() // no instance online: only the dependents stand in the way

	_, err := f.adm.Remove(f.ctx, "report", time.Second, false)
	if !errors.Is(err, admin.ErrHasDependents) || !strings.Contains(err.Error(), "summary") {
		t.Fatalf("Remove of a parent: %v, want ErrHasDependents naming summary", err)
	}
	if !f.exists(p.Config()) {
		t.Fatal("a refused removal deleted the parent's config")
	}
	if _, err := f.adm.Remove(f.ctx, "report", 20*time.Second, true); err != nil {
		t.Fatalf("forced Remove: %v", err)
	}
	st, err := f.adm.Status(f.ctx, "summary")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Parents) != 1 || st.Parents[0].Status != "gone" || !slices.ContainsFunc(st.Problems, func(s string) bool { return strings.Contains(s, `parent "report" is gone`) }) {
		t.Errorf("the dependent's status after its parent went: parents %+v, problems %q", st.Parents, st.Problems)
	}
}
