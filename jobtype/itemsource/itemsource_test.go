package itemsource_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/itemsource"
)

func TestParse(t *testing.T) {
	for in, want := range map[string][]string{
		"a\nb\n\n  c  \n":       {"a", "b", "c"},
		`  ["x", "y z"]` + "\n": {"x", "y z"},
		"":                      nil,
		"[]":                    {},
	} {
		got, err := itemsource.Parse([]byte(in))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := itemsource.Parse([]byte(`["a", 3]`)); err == nil || !strings.Contains(err.Error(), "JSON array of strings") {
		t.Errorf("a JSON array with a number: %v", err)
	}
}

func TestCommand(t *testing.T) {
	ctx := context.Background()
	c, err := itemsource.NewCommand(itemsource.Command{Argv: []string{"printf", `t1\nt2\n`}})
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := c.List(ctx); err != nil || !slices.Equal(keys, []string{"t1", "t2"}) {
		t.Fatalf("List = %q, %v", keys, err)
	}
	fail, _ := itemsource.NewCommand(itemsource.Command{Argv: []string{"sh", "-c", "echo no database >&2; exit 3"}})
	if _, err := fail.List(ctx); err == nil || !strings.Contains(err.Error(), "exit status 3: no database") {
		t.Fatalf("a failing command: %v, want its status and stderr", err)
	}
	big, _ := itemsource.NewCommand(itemsource.Command{Argv: []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' 'k'", itemsource.MaxOutput+10)}})
	if _, err := big.List(ctx); !errors.Is(err, itemsource.ErrTooLarge) {
		t.Fatalf("a command printing more than MaxOutput: %v, want ErrTooLarge", err)
	}
	slow, _ := itemsource.NewCommand(itemsource.Command{Argv: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond})
	if _, err := slow.List(ctx); err == nil {
		t.Fatal("a command past its timeout succeeded")
	}
	for _, bad := range []itemsource.Command{{}, {Argv: []string{""}}, {Argv: []string{"true"}, Timeout: -1}, {Argv: []string{"true"}, Timeout: job.ItemListTimeout + 1}} {
		if _, err := itemsource.NewCommand(bad); !errors.Is(err, itemsource.ErrInvalidConfig) {
			t.Errorf("NewCommand(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestURL(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		fmt.Fprint(w, "r1\nr2\n")
	}))
	defer srv.Close()
	if _, err := itemsource.NewURL(itemsource.URL{URL: srv.URL}); !errors.Is(err, itemsource.ErrAddress) {
		t.Fatalf("a loopback URL without AllowPrivateAddresses: %v, want ErrAddress", err)
	}
	u, err := itemsource.NewURL(itemsource.URL{URL: srv.URL, AllowPrivateAddresses: true})
	if err != nil {
		t.Fatal(err)
	}
	if keys, err := u.List(context.Background()); err != nil || !slices.Equal(keys, []string{"r1", "r2"}) {
		t.Fatalf("List = %q, %v", keys, err)
	}
	status = http.StatusServiceUnavailable
	if _, err := u.List(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a 503: %v", err)
	}
	for _, bad := range []string{"", "ftp://x/y", "http://", "::"} {
		if _, err := itemsource.NewURL(itemsource.URL{URL: bad}); !errors.Is(err, itemsource.ErrInvalidConfig) {
			t.Errorf("NewURL(%q) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// With keeps a range job's ranges.
func TestWithKeepsRanges(t *testing.T) {
	rj := job.RangeFunc(func(context.Context, job.RangeContext) error { return nil })
	src, _ := itemsource.NewCommand(itemsource.Command{Argv: []string{"true"}})
	if _, ok := itemsource.With(rj, src).(job.RangeJob); !ok {
		t.Fatal("With hid the range job")
	}
	if _, ok := itemsource.With(job.SimpleFunc(func(context.Context, job.ShardingContext) error { return nil }), src).(job.RangeJob); ok {
		t.Fatal("With made a plain job a range job")
	}
}
