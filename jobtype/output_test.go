package jobtype_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
)

func TestOutputKeepsJSONAndQuotesText(t *testing.T) {
	for _, c := range []struct {
		text      string
		cut, tail bool
		want      string
	}{
		{text: `{"rows": 12}` + "\n", want: `{"rows": 12}`},
		{text: "42\n", want: `42`},
		{text: "done: 12 rows\n\n", want: `"done: 12 rows"`},
		{text: "a <b> & \"c\"\n", want: `"a <b> & \"c\""`},
		{text: `{"rows": 12}`, cut: true, want: `"{\"rows\": 12}"`}, // a part is not taken as JSON
		{text: "bad \xff byte", want: `"bad \ufffd byte"`},
		{text: "", want: ``},
		{text: "\n\n", want: ``},
	} {
		got := jobtype.Output([]byte(c.text), c.cut, c.tail)
		if string(got) != c.want {
			t.Errorf("Output(%q, cut=%v) = %s, want %s", c.text, c.cut, got, c.want)
		}
	}
}

// TestOutputFitsTheLimit: a long text, with runes of several bytes and
// characters JSON escapes, is cut to at most job.MaxOutputSize bytes of
// JSON, at a rune's edge, keeping its start or its end.
func TestOutputFitsTheLimit(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3*job.MaxOutputSize; i++ {
		fmt.Fprintf(&b, "line %d: 北京 \x01 \"q\"\n", i)
	}
	text := b.String()
	for _, tail := range []bool{false, true} {
		got := jobtype.Output([]byte(text), true, tail)
		if len(got) > job.MaxOutputSize || len(got) < job.MaxOutputSize-8 {
			t.Fatalf("tail=%v: %d bytes of JSON, want just under %d", tail, len(got), job.MaxOutputSize)
		}
		var s string
		if err := json.Unmarshal(got, &s); err != nil {
			t.Fatalf("tail=%v: not a JSON string: %v", tail, err)
		}
		if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			t.Fatalf("tail=%v: a rune was cut", tail)
		}
		want := strings.TrimRight(text, "\n")
		if tail && !strings.HasSuffix(want, s) || !tail && !strings.HasPrefix(want, s) {
			t.Fatalf("tail=%v: the output is not the text's %s", tail, map[bool]string{true: "end", false: "start"}[tail])
		}
	}
	// A JSON document over the limit is text, cut.
	big := `["` + strings.Repeat("x", job.MaxOutputSize) + `"]`
	if got := jobtype.Output([]byte(big), false, true); len(got) > job.MaxOutputSize || got[0] != '"' {
		t.Fatalf("an oversized JSON document: %d bytes starting %q", len(got), got[:1])
	}
}
