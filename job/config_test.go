package job

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests name IANA zones; do not depend on the host's database

	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/job/internal/schedule"
)

// validConfigForTest returns a valid config that test cases break one
// field at a time.
func validConfigForTest() Config {
	return Config{
		Name:               "orders-sync",
		Cron:               "*/5 * * * * *",
		ShardingTotalCount: 4,
	}
}

// assertConfigError checks that err matches every sentinel in wantIs and
// contains every string in wantMsg.
func assertConfigError(t *testing.T, err error, wantIs []error, wantMsg []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one matching %v", wantIs)
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("errors.Is(err, ErrInvalidConfig) = false for %v", err)
	}
	for _, target := range wantIs {
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

func TestConfigValidateAcceptsValid(t *testing.T) {
	tests := map[string]func(c *Config){
		"minimal":                 func(c *Config) {},
		"descriptor every":        func(c *Config) { c.Cron = "@every 1s" },
		"descriptor hourly":       func(c *Config) { c.Cron = "@hourly" },
		"surrounding spaces":      func(c *Config) { c.Cron = " 0 0 9 * * MON-FRI " },
		"time zone":               func(c *Config) { c.TimeZone = "Asia/Shanghai" },
		"UTC":                     func(c *Config) { c.TimeZone = "UTC" },
		"longest name":            func(c *Config) { c.Name = strings.Repeat("a", MaxNameLength) },
		"name characters":         func(c *Config) { c.Name = "A.z_0-9" },
		"one item":                func(c *Config) { c.ShardingTotalCount = 1 },
		"most items":              func(c *Config) { c.ShardingTotalCount = MaxShardingTotalCount },
		"item parameters":         func(c *Config) { c.ShardingItemParameters = "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen" },
		"some items, empty value": func(c *Config) { c.ShardingItemParameters = "0=,3=x" },
		"spaces around keys":      func(c *Config) { c.ShardingItemParameters = " 0 =a, 1=b" },
		"value with equals":       func(c *Config) { c.ShardingItemParameters = "0=a=b" },
		"misfire once":            func(c *Config) { c.Misfire = MisfireOnce },
		"misfire skip":            func(c *Config) { c.Misfire = MisfireSkip },
		"intervals":               func(c *Config) { c.MaxTimeDiff, c.ReconcileInterval = time.Second, 5*time.Minute },
		"strategy":                func(c *Config) { c.ShardingStrategy = "ODEVITY" },
		"every flag": func(c *Config) {
			c.Failover, c.Unmonitored, c.Disabled, c.Overwrite = true, true, true, true
			c.JobParameter, c.Description = "p", "d"
		},
		"defaults filled in": func(c *Config) { *c = c.WithDefaults() },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			c := validConfigForTest()
			mutate(&c)
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate() = %v", err)
			}
		})
	}
}

func TestConfigValidateRejectsInvalid(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantIs  []error
		wantMsg []string
	}{
		{"missing name", func(c *Config) { c.Name = "" }, []error{ErrInvalidName}, []string{"job (no name): name is required"}},
		{"name with space", func(c *Config) { c.Name = "orders sync" }, []error{ErrInvalidName}, []string{`job "orders sync": name "orders sync": may contain only`}},
		{"name with slash", func(c *Config) { c.Name = "a/b" }, []error{ErrInvalidName}, []string{`name "a/b"`}},
		{"name too long", func(c *Config) { c.Name = strings.Repeat("a", MaxNameLength+1) }, []error{ErrInvalidName}, []string{"longer than 128"}},
		{"name dotdot", func(c *Config) { c.Name = ".." }, []error{ErrInvalidName}, []string{"reserved"}},
		{"missing cron", func(c *Config) { c.Cron = "" }, []error{ErrInvalidCron}, []string{`job "orders-sync": cron is required`}},
		{"garbage cron", func(c *Config) { c.Cron = "every day" }, []error{ErrInvalidCron}, []string{`job "orders-sync": cron "every day"`}},
		{"four-field cron", func(c *Config) { c.Cron = "*/5 * * *" }, []error{ErrInvalidCron},
			[]string{`job "orders-sync": cron "*/5 * * *": expected exactly 6 fields`}},
		{"five-field cron", func(c *Config) { c.Cron = "*/5 * * * *" }, []error{ErrInvalidCron},
			[]string{`cron "*/5 * * * *": expected exactly 6 fields, found 5`, "seconds first"}},
		{"out of range field", func(c *Config) { c.Cron = "0 61 * * * *" }, []error{ErrInvalidCron}, []string{`cron "0 61 * * * *"`}},
		{"unknown descriptor", func(c *Config) { c.Cron = "@fortnightly" }, []error{ErrInvalidCron}, []string{"@fortnightly"}},
		{"CRON_TZ prefix", func(c *Config) { c.Cron = "CRON_TZ=Asia/Tokyo 0 0 9 * * *" }, []error{ErrInvalidCron}, []string{"set timeZone instead"}},
		{"TZ prefix without fields", func(c *Config) { c.Cron = "TZ=UTC" }, []error{ErrInvalidCron}, []string{"time zone prefixes"}},
		{"every below a second", func(c *Config) { c.Cron = "@every 500ms" }, []error{ErrInvalidCron}, []string{"whole number of seconds"}},
		{"every fraction", func(c *Config) { c.Cron = "@every 1500ms" }, []error{ErrInvalidCron}, []string{"whole number of seconds"}},
		{"every negative", func(c *Config) { c.Cron = "@every -5s" }, []error{ErrInvalidCron}, []string{"at least 1s"}},
		{"never fires", func(c *Config) { c.Cron = "0 0 0 30 2 *" }, []error{ErrInvalidCron}, []string{"never fires"}},
		{"a field of nothing", func(c *Config) { c.Cron = ", * * * * *" }, []error{ErrInvalidCron}, []string{"never fires", "seconds field"}},
		{"an empty day-of-week list", func(c *Config) { c.Cron = "* * * * * ," }, []error{ErrInvalidCron}, []string{"never fires", "day-of-week"}},
		{"bad time zone", func(c *Config) { c.TimeZone = "Mars/Olympus" }, []error{ErrInvalidTimeZone}, []string{`job "orders-sync": timeZone "Mars/Olympus": unknown time zone`}},
		{"count zero", func(c *Config) { c.ShardingTotalCount = 0 }, []error{ErrInvalidShardingCount}, []string{`job "orders-sync": shardingTotalCount 0: must be between 1 and 10000`}},
		{"count negative", func(c *Config) { c.ShardingTotalCount = -3 }, []error{ErrInvalidShardingCount}, []string{"shardingTotalCount -3"}},
		{"count too big", func(c *Config) { c.ShardingTotalCount = 10001 }, []error{ErrInvalidShardingCount}, []string{"shardingTotalCount 10001"}},
		{"duplicate item", func(c *Config) { c.ShardingItemParameters = "0=a,0=b" }, []error{ErrInvalidItemParameters},
			[]string{`job "orders-sync": shardingItemParameters "0=a,0=b": item 0 is given more than once`}},
		{"item out of range", func(c *Config) { c.ShardingItemParameters = "5=x" }, []error{ErrInvalidItemParameters},
			[]string{`entry "5=x": item 5 is outside [0,4)`}},
		{"item equal to count", func(c *Config) { c.ShardingItemParameters = "4=x" }, []error{ErrInvalidItemParameters}, []string{"outside [0,4)"}},
		{"item not a number", func(c *Config) { c.ShardingItemParameters = "a=b" }, []error{ErrInvalidItemParameters},
			[]string{`entry "a=b": item "a" is not a non-negative integer`}},
		{"item negative", func(c *Config) { c.ShardingItemParameters = "-1=b" }, []error{ErrInvalidItemParameters}, []string{`item "-1"`}},
		{"item plus sign", func(c *Config) { c.ShardingItemParameters = "+1=b" }, []error{ErrInvalidItemParameters}, []string{`item "+1"`}},
		{"entry without equals", func(c *Config) { c.ShardingItemParameters = "0a" }, []error{ErrInvalidItemParameters},
			[]string{`entry "0a" has no '='`}},
		{"empty entry", func(c *Config) { c.ShardingItemParameters = "0=a,,1=b" }, []error{ErrInvalidItemParameters}, []string{"entry 2 is empty"}},
		{"trailing comma", func(c *Config) { c.ShardingItemParameters = "0=a," }, []error{ErrInvalidItemParameters}, []string{"entry 2 is empty"}},
		{"huge item", func(c *Config) { c.ShardingItemParameters = "99999999999999999999999=x" }, []error{ErrInvalidItemParameters}, []string{"outside [0,4)"}},
		{"bad misfire", func(c *Config) { c.Misfire = "later" }, nil, []string{`job "orders-sync": misfire "later": must be "once" or "skip"`}},
		{"negative maxTimeDiff", func(c *Config) { c.MaxTimeDiff = -time.Second }, nil, []string{"maxTimeDiff -1s: must not be negative"}},
		{"tiny maxTimeDiff", func(c *Config) { c.MaxTimeDiff = 10 * time.Millisecond }, nil, []string{"maxTimeDiff 10ms: must be 0 (no check) or at least 1s"}},
		{"negative reconcileInterval", func(c *Config) { c.ReconcileInterval = -time.Minute }, nil, []string{"reconcileInterval -1m0s: must not be negative"}},
		{"tiny reconcileInterval", func(c *Config) { c.ReconcileInterval = time.Millisecond }, nil, []string{"reconcileInterval 1ms"}},
		{"bad strategy", func(c *Config) { c.ShardingStrategy = "avg allocation" }, nil, []string{`shardingStrategy "avg allocation"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfigForTest()
			tt.mutate(&c)
			assertConfigError(t, c.Validate(), tt.wantIs, tt.wantMsg)
		})
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := Config{
		Name:                   "bad name",
		Cron:                   "*/5 * * * *",
		TimeZone:               "Nowhere/Special",
		ShardingTotalCount:     0,
		ShardingItemParameters: "0=a,0=b,x",
		Misfire:                "sometimes",
		MaxTimeDiff:            -1,
	}
	err := c.Validate()
	assertConfigError(t, err,
		[]error{ErrInvalidName, ErrInvalidCron, ErrInvalidTimeZone, ErrInvalidShardingCount, ErrInvalidItemParameters},
		[]string{`job "bad name": name`, `job "bad name": cron`, `job "bad name": timeZone`, `job "bad name": shardingTotalCount`,
			"item 0 is given more than once", `entry "x" has no '='`, `misfire "sometimes"`, "maxTimeDiff"})
	var merr interface{ Unwrap() []error }
	if !errors.As(err, &merr) {
		t.Fatalf("error is %T, want one with Unwrap() []error", err)
	}
	if got := len(merr.Unwrap()); got != 8 {
		t.Errorf("got %d problems, want 8:\n%v", got, err)
	}
	if errors.Is(err, ErrUnknownKey) || errors.Is(err, ErrDuplicateJob) {
		t.Errorf("error matches a sentinel it should not: %v", err)
	}
	// A bad count does not also make every item "out of range".
	if strings.Contains(err.Error(), "outside") {
		t.Errorf("item range checked against an invalid count:\n%v", err)
	}
}

func TestConfigValidateSingleProblemMessage(t *testing.T) {
	c := validConfigForTest()
	c.Cron = "*/5 * * *"
	want := `job "orders-sync": cron "*/5 * * *": expected exactly 6 fields, found 4: [*/5 * * *]`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Fatalf("Validate() = %v\nwant %s", err, want)
	}
}

func TestConfigWithDefaults(t *testing.T) {
	got := validConfigForTest().WithDefaults()
	want := validConfigForTest()
	want.Misfire = MisfireOnce
	want.ReconcileInterval = DefaultReconcileInterval
	want.ShardingStrategy = DefaultShardingStrategy
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}

	set := validConfigForTest()
	set.Misfire, set.ReconcileInterval, set.ShardingStrategy = MisfireSkip, 5*time.Second, "ODEVITY"
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults() changed set fields: %+v", got)
	}
	if got.TimeZone != "" || got.MaxTimeDiff != 0 || got.Unmonitored || got.Failover {
		t.Errorf("WithDefaults() set fields whose zero value is the default: %+v", got)
	}
}

func TestConfigSchedule(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

	c := validConfigForTest()
	c.Cron = "0 0 9 * * *"
	c.TimeZone = "Asia/Shanghai"
	sched, loc, err := c.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if loc.String() != shanghai.String() {
		t.Errorf("location = %v, want %v", loc, shanghai)
	}
	// 09:00 in Shanghai (UTC+8) is 01:00 UTC, whatever zone from is in.
	if next := sched.Next(from); !next.Equal(time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)) {
		t.Errorf("Next(%v) = %v, want 01:00 UTC", from, next)
	}

	c.TimeZone = ""
	if _, loc, err := c.Schedule(); err != nil || loc != time.Local {
		t.Errorf("Schedule() with no zone = %v, %v; want time.Local", loc, err)
	}

	c.Cron = "@every 5s"
	sched, _, err = c.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sched.(schedule.Every); !ok {
		t.Errorf("schedule is %T, want schedule.Every", sched)
	}
	// Whole periods since the epoch: the next multiple of 5 s.
	if want := from.Truncate(5 * time.Second).Add(5 * time.Second); !sched.Next(from).Equal(want) {
		t.Errorf("Next = %v, want %v", sched.Next(from), want)
	}

	c.Cron = "*/5 * * * *"
	c.TimeZone = "Mars/Olympus"
	sched, loc, err = c.Schedule()
	assertConfigError(t, err, []error{ErrInvalidCron, ErrInvalidTimeZone}, []string{`job "orders-sync": cron "*/5 * * * *"`, `timeZone "Mars/Olympus"`})
	if sched != nil || loc != nil {
		t.Errorf("Schedule() returned %v, %v with an error", sched, loc)
	}
}

func TestConfigItemParameters(t *testing.T) {
	tests := []struct {
		params string
		total  int
		want   map[int]string
		errMsg string
	}{
		{"", 4, map[int]string{}, ""},
		{"0=Beijing,1=Shanghai", 4, map[int]string{0: "Beijing", 1: "Shanghai"}, ""},
		{" 2 = x ,3=", 4, map[int]string{2: " x ", 3: ""}, ""},
		{"0=a=b", 1, map[int]string{0: "a=b"}, ""},
		{"0=a,0=b", 4, nil, "item 0 is given more than once"},
		{"5=x", 4, nil, "outside [0,4)"},
		{"a=b", 4, nil, `item "a" is not a non-negative integer`},
		{"0a", 4, nil, `entry "0a" has no '='`},
		{"0=x", 0, nil, "outside [0,shardingTotalCount)"},
	}
	for _, tt := range tests {
		t.Run(tt.params, func(t *testing.T) {
			c := validConfigForTest()
			c.ShardingItemParameters, c.ShardingTotalCount = tt.params, tt.total
			got, err := c.ItemParameters()
			if tt.errMsg != "" {
				assertConfigError(t, err, []error{ErrInvalidItemParameters}, []string{`job "orders-sync": shardingItemParameters`, tt.errMsg})
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ItemParameters() = %v, want %v", got, tt.want)
			}
		})
	}

	// Every problem is reported.
	c := validConfigForTest()
	c.ShardingItemParameters = "0=a,0=b,5=x,a=b,0a"
	_, err := c.ItemParameters()
	var merr interface{ Unwrap() []error }
	if !errors.As(err, &merr) || len(merr.Unwrap()) != 4 {
		t.Errorf("ItemParameters() = %v, want 4 problems", err)
	}
}

func fullConfigForTest() Config {
	return Config{
		Name:                   "orders-sync",
		Cron:                   "*/5 * * * * *",
		TimeZone:               "Asia/Shanghai",
		ShardingTotalCount:     4,
		ShardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen",
		JobParameter:           "true",
		Failover:               true,
		Misfire:                MisfireSkip,
		Unmonitored:            true,
		MaxTimeDiff:            5 * time.Second,
		ReconcileInterval:      90 * time.Second,
		ShardingStrategy:       "ROUND_ROBIN",
		Timeout:                time.Minute,
		ItemsPerShard:          100,
		Overlap:                OverlapSkip,
		Start:                  time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		End:                    time.Date(2027, 6, 30, 23, 59, 59, 0, time.UTC),
		Limit:                  1000,
		Exclude:                "sat,sun,2026-12-25",
		Jitter:                 1500 * time.Millisecond,
		StartingDeadline:       10 * time.Minute,
		PausedUntil:            time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC),
		PauseNote:              "warehouse move",
		Description:            "Copies orders.\nSecond line: with a colon, # and 'quotes'.",
		Disabled:               true,
		Overwrite:              true,
		Retry:                  RetryPolicy{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second, Jitter: 0.2},
		Alert:                  AlertPolicy{Late: 30 * time.Second, NotRunFor: 2 * time.Hour},
	}
}

func TestConfigEncodeDecodeRoundTrip(t *testing.T) {
	tests := map[string]Config{
		"minimal":       validConfigForTest(),
		"full":          fullConfigForTest(),
		"with defaults": fullConfigForTest().WithDefaults(),
		"odd strings": func() Config {
			c := validConfigForTest()
			c.JobParameter = "  123  "
			c.Description = "null"
			c.ShardingItemParameters = "0=yes,1=~"
			return c
		}(),
		"invalid UTF-8 parameter": func() Config {
			c := validConfigForTest()
			c.JobParameter = "\xff\xfe"
			return c
		}(),
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeConfig(data)
			if err != nil {
				t.Fatalf("DecodeConfig(%s) = %v", data, err)
			}
			if got != c {
				t.Errorf("round trip through\n%s\ngave %+v\nwant %+v", data, got, c)
			}
		})
	}
}

func TestNearestKey(t *testing.T) {
	known := []string{"name", "cron", "shardingTotalCount", "failover", "jobs"}
	tests := map[string]string{
		"shardingTotalcount":  "shardingTotalCount",
		"SHARDINGTOTALCOUNT":  "shardingTotalCount",
		"shardingTotalCont":   "shardingTotalCount",
		"shardingTotalCounts": "shardingTotalCount",
		"failOver":            "failover",
		"crn":                 "cron",
		"job":                 "jobs",
		"retries":             "",
		"handlerName":         "",
	}
	for key, want := range tests {
		if got := suggest.Nearest(key, known); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", key, got, want)
		}
	}
	if d := suggest.EditDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d, want 3", d)
	}
}

func TestScheduleFiresOnceWhenClocksFallBack(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	at := func(spec string, from time.Time, n int) []string {
		s, _, err := Config{Name: "dst", Cron: spec, TimeZone: "America/New_York", ShardingTotalCount: 1}.Schedule()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for t := from; len(out) < n; {
			t = s.Next(t)
			out = append(out, t.UTC().Format("01-02 15:04"))
		}
		return out
	}
	// 2026-11-01: 01:00-01:59 happens twice in New York.
	from := time.Date(2026, 10, 31, 12, 0, 0, 0, ny)
	got := at("0 30 1 * * *", from, 2)
	if want := []string{"11-01 05:30", "11-02 06:30"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("daily 01:30 across fall-back: %v, want %v", got, want)
	}
	// Every 30 minutes keeps both passes through the repeated hour.
	got = at("0 */30 * * * *", time.Date(2026, 11, 1, 0, 45, 0, 0, ny), 5)
	if want := []string{"11-01 05:00", "11-01 05:30", "11-01 06:00", "11-01 06:30", "11-01 07:00"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("every 30 min across fall-back: %v, want %v", got, want)
	}
	// Spring forward: 02:30 does not exist on 2026-03-08 and is skipped.
	got = at("0 30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny), 2)
	if want := []string{"03-09 06:30", "03-10 06:30"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("daily 02:30 across spring-forward: %v, want %v", got, want)
	}
}
