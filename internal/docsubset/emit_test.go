package docsubset

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"go.yaml.in/yaml/v3"
)

// doc is a document of the shapes Writer writes, as Marshal sees it.
type doc struct {
	A string  `yaml:"a"`
	N int     `yaml:"num"`
	B bool    `yaml:"b"`
	F float64 `yaml:"f"`
	M *sub    `yaml:"m,omitempty"`
	Z string  `yaml:"z"`
}

type sub struct {
	D string  `yaml:"d"`
	J float64 `yaml:"j,omitempty"`
}

func writeDoc(d doc) []byte {
	var w Writer
	w.String("a", d.A)
	w.Int("num", d.N)
	w.Bool("b", d.B)
	w.Float("f", d.F)
	if d.M != nil {
		w.Map("m")
		w.String("d", d.M.D)
		if d.M.J != 0 {
			w.Float("j", d.M.J)
		}
		w.End()
	}
	w.String("z", d.Z)
	return w.Bytes()
}

func checkWrite(t *testing.T, d doc) {
	t.Helper()
	want, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := writeDoc(d); !bytes.Equal(got, want) {
		t.Fatalf("%q:\n got %q\nwant %q", d.A, got, want)
	}
}

// pieces are the parts of strings that change how Marshal writes them.
var pieces = []string{"", "a", "x y", " ", "  ", "\n", "\n\n", "\r", "\t", "#", " #", ":", ": ", "-", "- ", "?", "'", `"`, `\`,
	"[", "]", "{", "}", ",", "&", "*", "!", "|", ">", "%", "@", "`", "---", "...", "0", "1.5", "0x1F", "true", "yes",
	"no", "null", "~", "2026-12-01", "1:30", "é", "日本", "\u0085", "\u00a0", "\u2028", "\u2029", "\ufeff", "\ufffe",
	"\x00", "\x07", "\x1b", "\x7f", "\xff", "\xc3", "😀", "+", ".inf", "1e5", "0b101", "0o17", "<<", "=", "a=b,c"}

// The random strings' count is what the race-enabled test run can afford
// in a few seconds (200,000 took 39 s there); FuzzWriter goes further.
func TestWriterMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 25000 {
		var s, z []byte
		for range r.IntN(5) {
			s = append(s, pieces[r.IntN(len(pieces))]...)
		}
		for range r.IntN(3) {
			z = append(z, pieces[r.IntN(len(pieces))]...)
		}
		d := doc{A: string(s), N: r.IntN(2000) - 1000, B: i%2 == 0, F: r.NormFloat64() * 1e3, Z: string(z)}
		if i%3 == 0 {
			d.M = &sub{D: "1s", J: float64(r.IntN(5)) / 4}
		}
		checkWrite(t, d)
	}
}

func FuzzWriter(f *testing.F) {
	for _, p := range pieces {
		f.Add(p, "x"+p)
	}
	f.Fuzz(func(t *testing.T, a, z string) {
		checkWrite(t, doc{A: a, Z: z, M: &sub{D: a}})
	})
}
