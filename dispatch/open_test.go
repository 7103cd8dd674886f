package dispatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite path with characters a URI gives meaning to (#, ?, %) opens the
// file of that very name, not one cut at the # or the ?.
func TestSQLitePathWithURICharacters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "odd #1?%41.db")
	d := open(t, Config{DSN: path})
	mustWorker(t, d, "w", 1)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %q: %v", path, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "odd #1?%41.db") {
			t.Errorf("a file %q beside the database", e.Name())
		}
	}
}
