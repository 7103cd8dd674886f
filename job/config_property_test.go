package job

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// configGen draws configs from every option's value classes: unset, the
// smallest accepted value, ordinary values, and values that other options
// constrain (overlap × misfire × unmonitored, after × the parent's
// schedule, limit × start, pauseNote × pausedUntil, calendar × jitter).
// It draws invalid combinations too: the properties below hold for the
// configs Validate accepts, whatever share of the draws those are.
type configGen struct{ r *rand.Rand }

func (g configGen) pick(vals ...string) string { return vals[g.r.IntN(len(vals))] }

func (g configGen) dur(vals ...time.Duration) time.Duration { return vals[g.r.IntN(len(vals))] }

func (g configGen) coin() bool { return g.r.IntN(2) == 0 }

func (g configGen) config() Config {
	base := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	at := func() time.Time {
		switch g.r.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return base.Add(-time.Duration(g.r.IntN(1000)) * time.Hour)
		case 2:
			return base.Add(time.Duration(g.r.IntN(1000)) * time.Hour)
		}
		return base.AddDate(5, 0, 0) // years ahead
	}
	c := Config{
		Name:               g.pick("r", "orders-sync", "a.b_c-1", "Job9"),
		Cron:               g.pick("*/2 * * * * *", "0 0 * * * *", "@every 10s", "@hourly", "0 30 9 * * mon-fri", "0 0 0 1 * *", "0 0 0 29 2 *"),
		TimeZone:           g.pick("", "UTC", "Asia/Shanghai", "America/New_York"),
		ShardingTotalCount: 1 + g.r.IntN(8),
		Failover:           g.coin(),
		Misfire:            MisfirePolicy(g.pick("", string(MisfireOnce), string(MisfireSkip))),
		Overlap:            OverlapPolicy(g.pick("", string(OverlapBufferOne), string(OverlapSkip), string(OverlapReplace), string(OverlapAllow))),
		Unmonitored:        g.r.IntN(4) == 0,
		RecordInterval:     g.dur(0, 0, 0, time.Second, 20*time.Second, MaxRecordInterval),
		MaxTimeDiff:        g.dur(0, 0, MinInterval, 5*time.Second),
		ReconcileInterval:  g.dur(0, 0, MinInterval, time.Minute),
		ShardingStrategy:   g.pick("", "", DefaultShardingStrategy, "ROUND_ROBIN"),
		Timeout:            g.dur(0, 0, time.Millisecond, 30*time.Second),
		Jitter:             g.dur(0, 0, time.Millisecond, 300*time.Millisecond, 50*time.Second),
		StartingDeadline:   g.dur(0, 0, MinInterval, 10*time.Second),
		Exclude:            g.pick("", "", "sat,sun", "2026-12-25", "mon,tue,wed,thu,fri"),
		Description:        g.pick("", "nightly export"),
		Disabled:           g.r.IntN(5) == 0,
		Overwrite:          g.coin(),
		Alert:              AlertPolicy{Late: g.dur(0, 0, MinInterval, 30*time.Second), NotRunFor: g.dur(0, 0, MinInterval, time.Hour, 800*24*time.Hour)},
	}
	if g.coin() {
		c.ItemsPerShard = g.r.IntN(100)
	}
	if g.coin() {
		var parts []string
		for i := range c.ShardingTotalCount {
			if g.coin() {
				parts = append(parts, strconv.Itoa(i)+"="+g.pick("Beijing", "", "a b"))
			}
		}
		c.ShardingItemParameters = strings.Join(parts, ",")
	}
	c.JobParameter = g.pick("", "x=1", "quoted: 'yes'")
	c.Start, c.End, c.PausedUntil = at(), at(), at()
	if !c.Start.IsZero() && !c.End.IsZero() && c.End.Before(c.Start) {
		c.Start, c.End = c.End, c.Start
	}
	if !c.Start.IsZero() && g.coin() {
		c.Limit = 1 + g.r.IntN(5)
	}
	if !c.PausedUntil.IsZero() && g.coin() {
		c.PauseNote = "maintenance"
	}
	if g.r.IntN(3) == 0 {
		c.After = g.pick("parent", "parent, other")
		c.OnParentFailure = ParentPolicy(g.pick("", string(ParentSkip), string(ParentRun), string(ParentAlert)))
		c.AfterTimeout = g.dur(0, 0, 5*time.Second)
	}
	if g.r.IntN(3) == 0 {
		jitters := []float64{0, 0, 0.2, 1, 1.0 / 3, 0.123456789}
		c.Retry = RetryPolicy{Attempts: g.r.IntN(4), Backoff: g.dur(0, 0, 10*time.Millisecond, time.Second, 45*time.Second),
			MaxBackoff: g.dur(0, 0, 500*time.Millisecond, 30*time.Second, time.Minute), Jitter: jitters[g.r.IntN(len(jitters))]}
	}
	return c
}

// parentsOf returns the jobs c runs after, on c's schedule, so that a
// file holding them and c is consistent.
func parentsOf(c Config) []Config {
	var out []Config
	for _, name := range c.parents() {
		p := c
		p.Name = name
		p.After, p.OnParentFailure, p.AfterTimeout = "", "", 0
		p.RecordInterval = 0 // a parent's records are waited on
		out = append(out, p)
	}
	return out
}

// TestConfigPropertyValidStaysValid: any config Validate accepts stays
// valid, and means the same, through every path a config takes: its
// defaults, the stored document (Encode), a second instance reading that
// document (DecodeConfig and its defaults, as an instance reads the
// config node), the YAML job file, and a reload. Two instances given the
// same config store the same document. SHARDJOB_CONFIG_SEED reruns a
// printed seed; SHARDJOB_CONFIG_DRAWS sets how many configs are drawn.
func TestConfigPropertyValidStaysValid(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SHARDJOB_CONFIG_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SHARDJOB_CONFIG_SEED: %v", err)
		}
		seed = v
	}
	draws := 500
	if s := os.Getenv("SHARDJOB_CONFIG_DRAWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("SHARDJOB_CONFIG_DRAWS: %v", err)
		}
		draws = v
	}
	g := configGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	valid, failures := 0, 0
	for i := 0; i < draws && failures < 5; i++ {
		c := g.config()
		if c.Validate() != nil {
			continue
		}
		valid++
		if err := configPathsAgree(c); err != nil {
			failures++
			t.Errorf("seed %d, draw %d: %v\nconfig: %+v", seed, i, err, c)
		}
	}
	t.Logf("seed %d: %d of %d drawn configs valid", seed, valid, draws)
	if failures == 0 && valid < draws/20 {
		t.Fatalf("only %d of %d drawn configs were valid: the generator no longer covers the space", valid, draws)
	}
}

// configPathsAgree checks the properties for one valid config c.
func configPathsAgree(c Config) error {
	d := c.WithDefaults()
	if err := d.Validate(); err != nil {
		return fmt.Errorf("valid, but not after WithDefaults: %w", err)
	}
	if dd := d.WithDefaults(); !sameConfig(dd, d) {
		return fmt.Errorf("WithDefaults is not idempotent: %+v, then %+v", d, dd)
	}
	if _, _, err := d.Schedule(); err != nil {
		return fmt.Errorf("valid, but its schedule does not parse: %w", err)
	}

	// The stored document: what the first instance writes (its config,
	// defaults filled in or not) and what a second instance reads from it.
	for _, written := range []Config{c, d} {
		doc, err := written.Encode()
		if err != nil {
			return fmt.Errorf("valid, but Encode refuses it: %w", err)
		}
		if legacy := legacyEncode(written); !bytes.Equal(doc, legacy) {
			return fmt.Errorf("the document differs from yaml/v3's Marshal of it:\n%s\n%s", doc, legacy)
		}
		again, err := written.Encode()
		if err != nil || !bytes.Equal(doc, again) {
			return fmt.Errorf("two encodings of one config differ:\n%s\n%s", doc, again)
		}
		read, err := DecodeConfig(doc)
		if err != nil {
			return fmt.Errorf("a second instance refuses the stored document: %w\n%s", err, doc)
		}
		if !sameConfig(read, written) {
			return fmt.Errorf("the stored document reads back as another config:\n%s\nwrote %+v\nread  %+v", doc, written, read)
		}
		if rd := read.WithDefaults(); !sameConfig(rd, d) {
			return fmt.Errorf("the second instance's config (defaults filled) differs from the first's:\n%+v\n%+v", rd, d)
		} else if err := rd.Validate(); err != nil {
			return fmt.Errorf("the second instance's config is invalid: %w", err)
		}
	}
	// Another job encoded in between (the encoder keeps the last
	// document's tail) does not change c's document.
	other := d
	other.Name, other.Description = "zz-other", "something else"
	want, _ := d.Encode()
	if _, err := other.Encode(); err != nil {
		return fmt.Errorf("a renamed copy is invalid: %w", err)
	}
	if got, _ := d.Encode(); !bytes.Equal(got, want) {
		return fmt.Errorf("the document depends on what was encoded before it:\n%s\n%s", want, got)
	}

	// The YAML job file, with the parents it runs after: package jobfile
	// reads each of its jobs with its DecodeConfigNode, a node of its
	// jobs: list, and checks them together with CheckDependencies.
	var file bytes.Buffer
	file.WriteString("jobs:\n")
	for _, j := range append(parentsOf(c), c) {
		doc, err := j.Encode()
		if err != nil {
			return fmt.Errorf("a parent of the config is invalid: %w", err)
		}
		for k, line := range strings.Split(strings.TrimRight(string(doc), "\n"), "\n") {
			if k == 0 {
				file.WriteString("  - " + line + "\n")
			} else {
				file.WriteString("    " + line + "\n")
			}
		}
	}
	if JobFileForTest == nil {
		return errors.New("no reader of job files: JobFileForTest is set by configsubset_test.go")
	}
	jobs, err := JobFileForTest(file.Bytes())
	if err != nil {
		return fmt.Errorf("a job file with the config (and its parents) is refused: %w", err)
	}
	if err := CheckDependencies(jobs, nil); err != nil {
		return fmt.Errorf("a job file with the config and its parents is refused: %w", err)
	}
	got := jobs[len(jobs)-1]
	if !sameConfig(got, c) {
		return fmt.Errorf("the job file reads back as another config:\nwant %+v\ngot  %+v", c, got)
	}
	if err := joinConfigErrors(dependencyProblems(append(parentsOf(d), d), jobPlace)); err != nil {
		return fmt.Errorf("with its defaults, the config no longer fits its parents: %w", err)
	}
	return nil
}

// sameConfig compares configs field by field, times by the instant (a
// document keeps the instant, not the location).
func sameConfig(a, b Config) bool {
	if !a.Start.Equal(b.Start) || !a.End.Equal(b.End) || !a.PausedUntil.Equal(b.PausedUntil) {
		return false
	}
	a.Start, a.End, a.PausedUntil = time.Time{}, time.Time{}, time.Time{}
	b.Start, b.End, b.PausedUntil = time.Time{}, time.Time{}, time.Time{}
	return a == b
}
