package configdoc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// fieldsDoc is a document of every kind of field.
type fieldsDoc struct {
	Name    string
	Policy  policy
	Note    string
	Count   int
	Limit   int
	On      bool
	Off     bool // written inverted, as "monitored"
	Every   time.Duration
	Timeout time.Duration
	Start   time.Time
	Days    string
	Retry   Retry
	Alert   Alert
}

type policy string

var errUnknown = errors.New("unknown key")

var docFields = []Field[fieldsDoc]{
	Text("name", nil, false, func(d *fieldsDoc) *string { return &d.Name }),
	Text("policy", nil, false, func(d *fieldsDoc) *policy { return &d.Policy }),
	Text("note", nil, true, func(d *fieldsDoc) *string { return &d.Note }),
	Number("count", nil, false, func(d *fieldsDoc) *int { return &d.Count }),
	Number("limit", nil, true, func(d *fieldsDoc) *int { return &d.Limit }),
	Flag("on", nil, false, func(d *fieldsDoc) *bool { return &d.On }),
	Flag("monitored", nil, true, func(d *fieldsDoc) *bool { return &d.Off }),
	Span("every", nil, false, func(d *fieldsDoc) *time.Duration { return &d.Every }),
	Span("timeout", nil, true, func(d *fieldsDoc) *time.Duration { return &d.Timeout }),
	Moment("start", nil, func(d *fieldsDoc) *time.Time { return &d.Start }),
	List("days", nil, func(d *fieldsDoc) *string { return &d.Days }),
	RetryField("retry", nil, errUnknown, func(d *fieldsDoc) *Retry { return &d.Retry }),
	AlertField("alert", nil, func(d *fieldsDoc) *Alert { return &d.Alert }),
}

func TestFieldsEncode(t *testing.T) {
	for _, tc := range []struct {
		d    fieldsDoc
		want string
	}{
		{fieldsDoc{}, "name: \"\"\npolicy: \"\"\ncount: 0\non: false\nmonitored: true\nevery: 0s\n"},
		{fieldsDoc{Name: "a", Policy: "skip", Note: "hi", Count: 2, Limit: 3, On: true, Off: true, Every: time.Second, Timeout: time.Minute,
			Start: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Days: "sat,sun",
			Retry: Retry{Attempts: 2, Backoff: time.Second, Jitter: 0.5}, Alert: Alert{NotRunFor: time.Hour}},
			"name: a\npolicy: skip\nnote: hi\ncount: 2\nlimit: 3\non: true\nmonitored: false\nevery: 1s\ntimeout: 1m0s\n" +
				"start: \"2026-12-01T08:00:00Z\"\ndays: sat,sun\nretry:\n    attempts: 2\n    backoff: 1s\n    jitter: 0.5\nalert:\n    notRunFor: 1h0m0s\n"},
	} {
		if got := string(Encode(&tc.d, docFields)); got != tc.want {
			t.Errorf("Encode(%+v) =\n%s\nwant\n%s", tc.d, got, tc.want)
		}
	}
}

func TestFieldsRoundTrip(t *testing.T) {
	in := fieldsDoc{Name: "a", Policy: "skip", Count: 2, Off: true, Every: time.Second, Timeout: time.Minute, Days: "sat",
		Start: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Retry: Retry{Attempts: 1}, Alert: Alert{Late: time.Minute}}
	root, err := docsubset.Parse(context.Background(), Encode(&in, docFields), docsubset.Limits{Bytes: 1 << 12, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	var out fieldsDoc
	w := Walk(&out, root, docFields, nil, nil, errUnknown)
	w.Times(time.UTC, map[string]*time.Time{"start": &out.Start})
	if len(w.Problems) > 0 {
		t.Fatalf("problems: %+v", w.Problems)
	}
	if out != in {
		t.Errorf("decoded %+v, want %+v", out, in)
	}
}

func TestTimesReportsABadTime(t *testing.T) {
	root, err := docsubset.Parse(context.Background(), []byte("start: tomorrow\n"), docsubset.Limits{Bytes: 1 << 10, Depth: 8})
	if err != nil {
		t.Fatal(err)
	}
	var out fieldsDoc
	w := Walk(&out, root, docFields, nil, nil, errUnknown)
	w.Times(time.UTC, map[string]*time.Time{"start": &out.Start})
	if len(w.Problems) != 1 || w.Problems[0].Key != "start" || w.Problems[0].Line != 1 || !w.Bad["start"] {
		t.Errorf("problems %+v, bad %v; want one for start at line 1", w.Problems, w.Bad)
	}
}
