package configdoc

import (
	"bytes"
	"sync/atomic"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// nameKey starts every config document.
const nameKey = "name: "

// Tails writes documents that start with their name line and whose rest
// depends on a key K (package job's Config with the name left out): the
// rest is written once for the documents that share a key, as the jobs
// registered one after another mostly do. Its zero value is ready to use.
type Tails[K comparable] struct {
	last atomic.Pointer[tailEntry[K]]
}

// tailEntry is a document's part after the name line, for key.
type tailEntry[K comparable] struct {
	key  K
	tail []byte
}

// Document returns the document of name with the rest given by key;
// write writes the whole document for a name, when the cache cannot
// (the first time for a key, or a name the writer puts on several lines).
func (t *Tails[K]) Document(name string, key K, write func(name string) []byte) []byte {
	line := []byte(name + "\n")
	if !PlainName(name) {
		var w docsubset.Writer
		w.String("name", name)
		line = bytes.TrimPrefix(w.Bytes(), []byte(nameKey))
		if bytes.IndexByte(line, '\n') != len(line)-1 {
			return write(name)
		}
	}
	var tail []byte
	if e := t.last.Load(); e != nil && e.key == key {
		tail = e.tail
	} else {
		doc, head := write("x"), nameKey+"x\n"
		if !bytes.HasPrefix(doc, []byte(head)) {
			return write(name)
		}
		tail = doc[len(head):]
		t.last.Store(&tailEntry[K]{key: key, tail: tail})
	}
	doc := make([]byte, 0, len(nameKey)+len(line)+len(tail))
	return append(append(append(doc, nameKey...), line...), tail...)
}
