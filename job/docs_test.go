package job

import (
	"os"
	"strings"
	"testing"
)

// The promises (what may run twice, what is lost, what is exclusive) are
// one table, in the same words wherever a reader meets them first: the
// README, the top of docs/guarantees.md and the user guide's failover
// section. A change to one is a change to all three.
func TestThePromisesReadTheSameInEveryDoc(t *testing.T) {
	const marker = "<!-- the promises:"
	var first, firstFile string
	for _, file := range []string{"../README.md", "../docs/guarantees.md", "../docs/user-guide.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		i := strings.Index(text, marker)
		if i < 0 {
			t.Errorf("%s has no table of the promises (a line starting %q)", file, marker)
			continue
		}
		// The table and the paragraph after it.
		table, rest, _ := strings.Cut(text[i:], "\n\n")
		after, _, _ := strings.Cut(rest, "\n\n")
		block := table + "\n\n" + after
		if !strings.Contains(block, "| **Runs twice** |") || !strings.Contains(block, "| **Lost** | nothing |") || !strings.Contains(block, "| **Exclusive** |") {
			t.Errorf("%s: the promises' table lacks a row (runs twice, lost, exclusive):\n%s", file, block)
		}
		if first == "" {
			first, firstFile = block, file
		} else if block != first {
			t.Errorf("%s's table of the promises differs from %s's; copy one over the other:\n%s\n---\n%s", file, firstFile, block, first)
		}
	}
}
