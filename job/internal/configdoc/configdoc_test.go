package configdoc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// value returns the node of key "v" in the one-line document "v: <text>".
func value(t *testing.T, text string) *docsubset.Node {
	t.Helper()
	root, err := docsubset.Parse(context.Background(), []byte("v: "+text+"\n"), docsubset.Limits{Bytes: 1 << 10, Depth: 8})
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return root.Content[1]
}

func TestValues(t *testing.T) {
	for _, tc := range []struct {
		text string
		dec  func(n *docsubset.Node) (any, error)
		want any
		err  string
	}{
		{"5", func(n *docsubset.Node) (any, error) { var v int; err := Int(n, &v); return v, err }, 5, ""},
		{"0x10", func(n *docsubset.Node) (any, error) { var v int; err := Int(n, &v); return v, err }, 16, ""},
		{"'5'", func(n *docsubset.Node) (any, error) { var v int; err := Int(n, &v); return v, err }, 0, `must be an integer, got the string "5"`},
		{"18446744073709551615", func(n *docsubset.Node) (any, error) { var v int; err := Int(n, &v); return v, err }, 0, "is out of range"},
		{"True", func(n *docsubset.Node) (any, error) { var v bool; err := Bool(n, &v); return v, err }, true, ""},
		{"false", func(n *docsubset.Node) (any, error) { var v bool; err := Bool(n, &v); return v, err }, false, ""},
		{"yes", func(n *docsubset.Node) (any, error) { var v bool; err := Bool(n, &v); return v, err }, false, `must be true or false, got the string "yes"`},
		{"1m30s", func(n *docsubset.Node) (any, error) { var v time.Duration; err := Duration(n, &v); return v, err }, 90 * time.Second, ""},
		{"5", func(n *docsubset.Node) (any, error) { var v time.Duration; err := Duration(n, &v); return v, err }, time.Duration(0), `"5" is not a duration`},
		{"~", func(n *docsubset.Node) (any, error) { var v time.Duration; err := Duration(n, &v); return v, err }, time.Duration(0), "got no value"},
		{"0.25", func(n *docsubset.Node) (any, error) { var v float64; err := Fraction(n, &v); return v, err }, 0.25, ""},
		{"1", func(n *docsubset.Node) (any, error) { var v float64; err := Fraction(n, &v); return v, err }, 1.0, ""},
		{".nan", func(n *docsubset.Node) (any, error) { var v float64; err := Fraction(n, &v); return v, err }, 0.0, "is not a number from 0 to 1"},
		{"sat,sun", func(n *docsubset.Node) (any, error) { var v string; err := StringList(n, &v); return v, err }, "sat,sun", ""},
		{"~", func(n *docsubset.Node) (any, error) { var v string; err := String(n, &v); return v, err }, "", "has no value"},
	} {
		got, err := tc.dec(value(t, tc.text))
		switch {
		case tc.err == "" && err != nil, tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.err)
		case got != tc.want:
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestNested(t *testing.T) {
	errUnknown := errors.New("unknown key")
	parse := func(doc string) *docsubset.Node {
		root, err := docsubset.Parse(context.Background(), []byte(doc), docsubset.Limits{Bytes: 1 << 10, Depth: 8})
		if err != nil {
			t.Fatal(err)
		}
		return root.Content[1]
	}
	r, err := DecodeRetry(parse("retry:\n  attempts: 3\n  backoff: 1s\n  jitter: 0.5\n"), errUnknown)
	if err != nil || r != (Retry{Attempts: 3, Backoff: time.Second, Jitter: 0.5}) {
		t.Errorf("retry: %+v, %v", r, err)
	}
	_, err = DecodeRetry(parse("retry:\n  attempts: 3\n  backof: 1s\n"), errUnknown)
	if !errors.Is(err, errUnknown) || !strings.Contains(err.Error(), `unknown key "backof" (did you mean "backoff"?) at line 3`) {
		t.Errorf("misspelt retry key: %v", err)
	}
	a, err := DecodeAlert(parse("alert:\n  late: 30s\n"))
	if err != nil || a != (Alert{Late: 30 * time.Second}) {
		t.Errorf("alert: %+v, %v", a, err)
	}
	if a, err := DecodeAlert(parse("alert:\n")); err != nil || a != (Alert{}) {
		t.Errorf("empty alert: %+v, %v", a, err)
	}
	if _, err := DecodeAlert(parse("alert:\n  every: 1m\n")); err == nil || !strings.Contains(err.Error(), `"every" (line 2): unknown key`) {
		t.Errorf("unknown alert key: %v", err)
	}
}

type doc struct {
	Name  string
	Count int
}

func TestWalk(t *testing.T) {
	errUnknown := errors.New("unknown key")
	fields := []Field[doc]{
		{Key: "name", Decode: func(c *doc, n *docsubset.Node) error { return String(n, &c.Name) }},
		{Key: "count", Kind: errUnknown, Decode: func(c *doc, n *docsubset.Node) error { return Int(n, &c.Count) }},
	}
	root, perr := docsubset.Parse(context.Background(), []byte("name: j\ncont: 3\ncount: x\nname: k\nhandler: h\n"), docsubset.Limits{Bytes: 1 << 10, Depth: 8})
	if perr != nil {
		t.Fatal(perr)
	}
	var got []string
	var d doc
	w := Walk(&d, root, fields, []string{"handler"}, func(k, v *docsubset.Node) error {
		got = append(got, k.Value+"="+v.Value)
		return nil
	}, errUnknown)
	if w.Name != "j" || d.Name != "j" || w.Lines["count"] != 3 || !w.Bad["count"] || len(got) != 1 || got[0] != "handler=h" {
		t.Errorf("walked %+v into %+v, extra keys %v", w, d, got)
	}
	var subjects []string
	for _, p := range w.Problems {
		subjects = append(subjects, p.Subject)
	}
	if want := `key "name"|unknown key "cont"|count`; strings.Join(subjects, "|") != want {
		t.Errorf("problems %q, want %q", subjects, want)
	}
	if w := Walk(&d, value(t, "x"), fields, nil, nil, errUnknown); !w.NotMapping || len(w.Problems) != 1 {
		t.Errorf("a scalar walked as %+v", w)
	}
}

func TestTails(t *testing.T) {
	var tails Tails[int]
	writes := 0
	write := func(name string) []byte {
		writes++
		var w docsubset.Writer
		w.String("name", name)
		w.Int("n", 1)
		return w.Bytes()
	}
	for _, tc := range []struct{ name, want string }{
		{"a", "name: a\nn: 1\n"},
		{"b", "name: b\nn: 1\n"},
		{"yes", "name: \"yes\"\nn: 1\n"},
		{"1.5", "name: \"1.5\"\nn: 1\n"},
	} {
		if got := string(tails.Document(tc.name, 7, write)); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.name, got, tc.want)
		}
	}
	if writes != 1 {
		t.Errorf("the tail was written %d times, want once", writes)
	}
}

func TestCalendarTime(t *testing.T) {
	loc := time.FixedZone("x", 3600)
	if tm, ok, err := CalendarTime(value(t, "2026-12-01T08:00:00"), loc); !ok || err != nil || !tm.Equal(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("local time: %v %v %v", tm, ok, err)
	}
	if _, ok, err := CalendarTime(value(t, "soon"), loc); ok || err == nil {
		t.Errorf("bad time: %v %v", ok, err)
	}
	if tm, ok, err := CalendarTime(value(t, "''"), loc); !ok || err != nil || !tm.IsZero() {
		t.Errorf("blank: %v %v %v", tm, ok, err)
	}
	if _, ok, err := CalendarTime(value(t, "~"), loc); ok || err != nil {
		t.Errorf("no value: %v %v", ok, err)
	}
	if err := Join([]error{errors.New("a"), Errors{errors.New("b")}}); err == nil || err.Error() != "2 problems:\n\t* a\n\t* b" {
		t.Errorf("Join: %v", err)
	}
}
