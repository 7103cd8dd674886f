package jobfile_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/jobfile"
	"github.com/shardjob/shardjob/jobtype"
)

// keysAt returns the keys run at each fire, by fire.
func keysAt(cs []jobtype.Context) map[time.Time][]string {
	out := map[time.Time][]string{}
	for _, c := range cs {
		out[c.FireTime] = append(out[c.FireTime], c.ShardingKey)
	}
	for _, ks := range out {
		slices.Sort(ks)
	}
	return out
}

func hasFireOf(cs []jobtype.Context, keys ...string) bool {
	for _, ks := range keysAt(cs) {
		if slices.Equal(ks, keys) {
			return true
		}
	}
	return false
}

// A script job whose items come from a command: each key the command
// prints runs once per fire, across the instances, with its key in the
// context; a changed list is run from a later fire on.
func TestItemsFromACommand(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	list := filepath.Join(dir, "tenants.txt")
	if err := os.WriteFile(list, []byte("acme\n\nglobex\n  initech  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := writeScript(t, dir, "record.sh", `eval "ctx=\${$#}"; printf '%s\n' "$ctx" >> "$1"`+"\n")
	f, _ := file(t, namespace(), fmt.Sprintf(`  - name: per-tenant
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 5
    items:
      command: [cat, %s]
      timeout: 5s
    script:
      command: [%s, %s]
`, list, sh, log))
	start(t, f, "s1", filepath.Join(dir, "s1"))
	start(t, f, "s2", filepath.Join(dir, "s2"))
	waitFor(t, "a fire of the three tenants", 60*time.Second, func() bool { return hasFireOf(runs(t, log), "acme", "globex", "initech") })
	if err := os.WriteFile(list, []byte(`["acme","hooli","initech"]`), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a fire of the changed list", 60*time.Second, func() bool { return hasFireOf(runs(t, log), "acme", "hooli", "initech") })
	item := map[string]int{}
	for _, c := range runs(t, log) {
		if c.ShardingKey == "" {
			t.Fatalf("a run without a key: %+v", c)
		}
		if it, ok := item[c.ShardingKey]; ok && it != c.ShardingItem {
			t.Fatalf("key %s ran as item %d and %d", c.ShardingKey, it, c.ShardingItem)
		}
		item[c.ShardingKey] = c.ShardingItem
	}
	if item["hooli"] != item["globex"] {
		t.Errorf("hooli took item %d, want globex's freed item %d", item["hooli"], item["globex"])
	}
}

// Items from an HTTP endpoint, refused at a private address unless the
// section allows it.
func TestItemsFromAURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `["eu-west","us-east"]`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	sh := writeScript(t, dir, "record.sh", `eval "ctx=\${$#}"; printf '%s\n' "$ctx" >> "$1"`+"\n")
	jobs := `  - name: per-region
    type: script
    cron: "* * * * * *"
    shardingTotalCount: 2
    items: {url: %s/regions%s}
    script:
      command: [%s, %s]
`
	f, _ := file(t, namespace(), fmt.Sprintf(jobs, srv.URL, "", sh, log))
	if _, err := jobfile.Build(f.Jobs[0], nil, jobfile.Options{}); err == nil || !strings.Contains(err.Error(), "allowPrivateAddresses") {
		t.Fatalf("a loopback item source without allowPrivateAddresses: %v", err)
	}
	f, _ = file(t, namespace(), fmt.Sprintf(jobs, srv.URL, ", allowPrivateAddresses: true", sh, log))
	start(t, f, "r1", filepath.Join(dir, "r1"))
	waitFor(t, "a fire of both regions", 60*time.Second, func() bool { return hasFireOf(runs(t, log), "eu-west", "us-east") })
}

// A followed definition whose items come from a command runs only on an
// instance that allows commands from definitions.
func TestFollowRefusesAnItemsCommandUnlessAllowed(t *testing.T) {
	ns := namespace()
	f, _ := file(t, ns, "")
	var logs logBuffer
	in := start(t, f, "http-only", "")
	follow(t, in, jobfile.FollowOptions{Options: jobfile.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	def := "name: listed\ncron: \"* * * * * *\"\nshardingTotalCount: 2\ntype: http\nhttp: {url: https://example.com/x}\nitems: {command: [cat, /etc/hostname]}\n"
	if _, err := jobfile.Define(ctx, in.rc, []byte(def)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refusal in the log", 30*time.Second, func() bool {
		return logs.count("job definition refused", "job=listed", "items: command") > 0
	})
	if hasJob(in.sched, "listed") {
		t.Fatal("the instance that does not allow commands added the job")
	}
}
