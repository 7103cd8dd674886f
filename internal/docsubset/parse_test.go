package docsubset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var testLimits = Limits{Bytes: 1 << 20, Depth: 64}

// v3Root parses data as go.yaml.in/yaml/v3 does, as internal/yamldoc
// reads it: nil for an empty or null document.
func v3Root(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than one document (%v)", err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// sameTree reports how n differs from y, "" if it does not.
func sameTree(n *Node, y *yaml.Node) string {
	if n == nil || y == nil {
		if n == nil && y == nil {
			return ""
		}
		return fmt.Sprintf("one of %v, %v is nil", n, y)
	}
	kinds := map[Kind]yaml.Kind{ScalarNode: yaml.ScalarNode, MappingNode: yaml.MappingNode, SequenceNode: yaml.SequenceNode}
	if kinds[n.Kind] != y.Kind {
		return fmt.Sprintf("line %d: kind %v, yaml/v3 %v", n.Line, n.Kind, y.Kind)
	}
	if n.Line != y.Line {
		return fmt.Sprintf("line %d, yaml/v3 %d", n.Line, y.Line)
	}
	if n.Kind == ScalarNode {
		if n.Tag != y.ShortTag() || n.Value != y.Value {
			return fmt.Sprintf("line %d: %s %q, yaml/v3 %s %q", n.Line, n.Tag, n.Value, y.ShortTag(), y.Value)
		}
		return ""
	}
	if len(n.Content) != len(y.Content) {
		return fmt.Sprintf("line %d: %d nodes, yaml/v3 %d", n.Line, len(n.Content), len(y.Content))
	}
	for i := range n.Content {
		if d := sameTree(n.Content[i], y.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkParse checks that what Parse accepts, yaml/v3 reads as the same
// tree, and that Parse refuses with an error, not a panic.
func checkParse(t *testing.T, data []byte) {
	t.Helper()
	n, err := Parse(context.Background(), data, testLimits)
	if err != nil {
		if err.Line < 0 || err.Error() == "" {
			t.Fatalf("%q: bad error %#v", data, err)
		}
		return
	}
	y, yerr := v3Root(data)
	if yerr != nil {
		t.Fatalf("%q: accepted, yaml/v3 refuses it: %v", data, yerr)
	}
	if d := sameTree(n, y); d != "" {
		t.Fatalf("%q: %s", data, d)
	}
}

// parseSeeds are documents in and out of the subset.
var parseSeeds = []string{
	"", "\n", "# only a comment\n", "---\n", "---\nname: x\n...\n", "name: x\n---\nname: y\n", "~\n", "null\n", "hello\n",
	"name: x\ncron: '*/2 * * * * *'\nshardingTotalCount: 3\nfailover: true\njitter: 0.5\n",
	"name: \"a\\tb\\u00e9\\x41\"\n", "name: 'it''s'\n", "name: x # comment\n", "name: x#y\n",
	"description: |\n    one\n    two\n", "description: |-\n    one\n\n    two\nnext: 1\n", "description: |4+\n\n     x\n\n\nnext: 1\n",
	"retry:\n    attempts: 3\n    backoff: 1s\nalert:\n    late: 30s\n", "exclude:\n  - sat\n  - sun\n", "exclude:\n- sat\n- sun\nx: 1\n",
	"exclude: []\n", "retry: {attempts: 3}\n", "a: &x 1\nb: *x\n", "<<: {a: 1}\n", "a: !!str 1\n", "a: !!binary aGVsbG8=\n",
	"a: >\n  folded\n", "a: 'multi\n  line'\n", "a:\tb\n", "\ta: b\n", "a:\n\t- b\n", "a: b: c\n", "a: b\n  c\n",
	"a:\n  b: 1\n c: 2\n", "a: 0x1F\nb: 0o17\nc: 1_000\nd: .inf\ne: 2026-12-01\nf: yes\ng: 1:30\n", "%YAML 1.2\n---\na: 1\n",
	"a: 1\r\n", "\ufeffa: 1\n", "a: \"\\q\"\n", "- a\n- b\n", "a: -\n", "a: - b\n", "? a\n: b\n", "a:\n  - - b\n", "a:\n  - b: 1\n",
	"key with spaces: 1\n", "1: 2\n", "true: x\n", "a: b\na: c\n", "a:\n    b:\n        c:\n            d: 1\n",
	"a: [x, [y]]\n", "a: [x, {y: 1}]\n", "a: {b: [1]}\n", "a: [x,\n  y]\n", "a: [x # c\n]\n", "a: [,]\n", "a: [x,,y]\n",
	"a: {b}\n", "a: {b: }\n", "a: {'b': 1}\n", "a: [x: 1]\n", "a: [&x 1]\n", "a: [*x]\n", "a: [x] y\n", "a: [x] # c\n",
	"a: {<<: 1}\n", "a: [a b, c:d, 'e''f', \"g\\th\"]\n", "a: {b: 1, c: 'x', d: \"y\",}\n", "a: [1, 2.5, true, ~, null]\n",
	"- [a, b]\n", "a: [http://x/y, 12:30]\n", "a: [x]]\n", "a: [x}\n",
}

// TestParseLongKey: a key of up to 1,024 characters to its colon is read
// as yaml/v3 reads it; a longer one, which YAML does not allow, is refused
// with an error that says so, in a block mapping and in a flow one.
func TestParseLongKey(t *testing.T) {
	for _, n := range []int{1023, 1024} {
		for _, doc := range []string{strings.Repeat("k", n) + ": 1\n", strings.Repeat("k", n-1) + " : 1\n",
			"a: {" + strings.Repeat("é", n) + ": 1}\n", "retry:\n    " + strings.Repeat(")", n) + ":\n        x: 1\n"} {
			if _, err := Parse(context.Background(), []byte(doc), testLimits); err != nil {
				t.Errorf("a key of %d characters: %v", n, err)
			}
			checkParse(t, []byte(doc))
		}
	}
	for _, doc := range []string{strings.Repeat("k", 1025) + ": 1\n", strings.Repeat("k", 1024) + " : 1\n",
		"a: {" + strings.Repeat("é", 1025) + ": 1}\n", "retry:\n    " + strings.Repeat(")", 1025) + ":\n        x: 1\n"} {
		_, err := Parse(context.Background(), []byte(doc), testLimits)
		if err == nil || !strings.Contains(err.Error(), "a key longer than 1024 characters") {
			t.Errorf("a key of 1,025 characters: got %v, want the key refused", err)
		}
		if _, yerr := v3Root([]byte(doc)); yerr == nil {
			t.Errorf("yaml/v3 reads a key of 1,025 characters; the bound is wrong")
		}
	}
}

// TestParseFlow reads the flow collections an operator writes on one
// line, as yaml/v3 reads them.
func TestParseFlow(t *testing.T) {
	for _, s := range []string{
		"exclude: [sat, sun, \"2026-12-25\"]\n", "exclude: []\n", "retry: {attempts: 3, backoff: 1s, jitter: 0.5}\n",
		"alert: {late: 30s, notRunFor: 2h}  # a comment\n", "a: [x, y,]\n", "a: {}\n", "a: [ 'it''s' , \"b\\u00e9\" ]\n",
		"a:\n  - [x, y]\n", "a: [http://x/y, 12:30, a b]\n",
	} {
		n, err := Parse(context.Background(), []byte(s), testLimits)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		y, yerr := v3Root([]byte(s))
		if yerr != nil {
			t.Fatalf("%q: yaml/v3: %v", s, yerr)
		}
		if d := sameTree(n, y); d != "" {
			t.Errorf("%q: %s", s, d)
		}
	}
	for s, want := range map[string]string{
		"a: [x, [y]]\n":  "a flow collection ([) inside a flow collection is not supported",
		"a: [x,\n  y]\n": "a flow collection ([) over several lines is not supported",
		"a: [x: 1]\n":    "a mapping inside a flow collection",
		"a: [x,,y]\n":    "an empty item in a flow collection is not supported",
	} {
		if _, err := Parse(context.Background(), []byte(s), testLimits); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", s, err, want)
		}
	}
}

func TestParseMatchesYAML(t *testing.T) {
	for _, s := range parseSeeds {
		checkParse(t, []byte(s))
	}
}

// TestParseWritten reads back what Writer writes, for strings of every
// style: the subset must read every document the writer makes.
func TestParseWritten(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 15000 { // a few seconds under -race; FuzzParse goes further
		var s []byte
		for range r.IntN(5) {
			s = append(s, pieces[r.IntN(len(pieces))]...)
		}
		d := doc{A: string(s), N: r.IntN(100), F: 0.25, M: &sub{D: "5s", J: 0.5}, Z: "end"}
		data := writeDoc(d)
		n, err := Parse(context.Background(), data, testLimits)
		y, yerr := v3Root(data)
		if err != nil {
			if yerr != nil || strings.ContainsAny(string(s), "\r\u0085\u2028\u2029") {
				continue // yaml/v3 cannot read it either, or reads it as other text
			}
			t.Fatalf("%q: %v", data, err)
		}
		if yerr != nil {
			t.Fatalf("%q: accepted, yaml/v3 refuses it: %v", data, yerr)
		}
		if diff := sameTree(n, y); diff != "" {
			t.Fatalf("%q: %s", data, diff)
		}
		var got string
		if err := String(n.Content[1], &got); err != nil || got != d.A {
			t.Fatalf("%q: read %q (%v), wrote %q", data, got, err, d.A)
		}
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("a:\n", 100)
	var b strings.Builder
	for i := range 100 {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	for _, tc := range []struct {
		doc  string
		kind ErrorKind
	}{
		{strings.Repeat("x", testLimits.Bytes+1), TooLarge},
		{b.String(), TooComplex},
		{deep, Invalid}, // repeated keys are Pairs' to report; this one parses
	} {
		_, err := Parse(context.Background(), []byte(tc.doc), testLimits)
		if tc.kind == Invalid {
			continue
		}
		if err == nil || err.Kind != tc.kind {
			t.Errorf("%.20q: %v, want kind %v", tc.doc, err, tc.kind)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkParse(t, []byte(s))
	})
}
