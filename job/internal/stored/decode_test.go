package stored

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// kinds are the stored values checkDecode reads.
var kinds = []string{"completed", "running", "misfire", "retry", "journal"}

// checkDecode decodes data as the scheduler reads a stored value of kind
// and checks what it got: it reports whether the value decoded, and a
// problem when the decoder's answer makes no sense (an error that is not
// ErrBadValue, a record or journal covering times outside 1970-9999, a
// mark that names no server or no time).
func checkDecode(kind string, data []byte) (decoded bool, problem error) {
	var err error
	switch kind {
	case "completed":
		var m Completed
		if m, err = DecodeCompleted(data); err == nil {
			c := m.Cover()
			for _, s := range c.Spans() {
				if s.First.UnixMilli() <= 0 || s.Last.UnixMilli() > maxMillis || s.Last.Before(s.First) {
					return true, fmt.Errorf("record %+v covers %v-%v", m, s.First, s.Last)
				}
			}
			if through := c.Through(); through.UnixMilli() > maxMillis {
				return true, fmt.Errorf("record %+v covers through %v", m, through)
			}
		}
	case "running":
		var m Running
		if m, err = DecodeRunning(data); err == nil && m.Server == "" {
			return true, fmt.Errorf("running mark %+v names no server", m)
		}
	case "misfire":
		var m Misfire
		if m, err = DecodeMisfire(data); err == nil && !validMillis(m.Since) {
			return true, fmt.Errorf("misfire mark since %d", m.Since)
		}
	case "retry":
		var m Retry
		if m, err = DecodeRetry(data); err == nil && (!validMillis(m.Fire) || m.Failed < 1 || m.Failed > MaxRetryFailed) {
			return true, fmt.Errorf("retry node %+v", m)
		}
	case "journal":
		var d Journal
		if d, err = DecodeJournal(data); err == nil {
			for job, items := range d.Jobs {
				for it, ran := range items {
					for _, s := range ran {
						if !validMillis(s[0]) || !validMillis(s[1]) || s[1] < s[0] {
							return true, fmt.Errorf("journal entry %s/%s keeps the run %v", job, it, s)
						}
					}
				}
				for it, ran := range d.Items(job) {
					c := RanCover(ran)
					if c.IsZero() || c.Through().UnixMilli() > maxMillis {
						return true, fmt.Errorf("journal entry %s/%d covers %v", job, it, c.Spans())
					}
				}
			}
		}
	default:
		return false, fmt.Errorf("unknown kind %q", kind)
	}
	if err != nil {
		if !errors.Is(err, ErrBadValue) {
			return false, fmt.Errorf("error %v is not ErrBadValue", err)
		}
		return false, nil
	}
	return true, nil
}

// seeds are values of every kind, good and bad: what the scheduler
// writes, values cut short, of the wrong type, out of range, and the
// header shapes of the etcd center (see regcenter's fuzz targets).
var seeds = []string{
	`{"fire":1764547200000,"failed":2}`,
	`{"fire":1764547200000,"failed":0}`,
	`{"fire":-1,"failed":1}`,
	`{"fire":1764547200000,"failed":1000000}`,
	`{"server":"s1","fire":1764547200000,"kind":"scheduled","begin":1764547200001,"end":1764547200002}`,
	`{"server":"s1","fire":1764547200000,"ran":[[1764547100000,1764547200000],[5,1]],"kind":"misfire","begin":1,"end":2,"error":"x"}`,
	`{"server":"s1","fire":9223372036854775807,"since":-1,"floor":-9223372036854775808}`,
	`{"server":"s1","fire":1764547200000,"ran":[[9223372036854775807,9223372036854775807]]}`,
	`{"server":"s1","fire":1764547200000,"ran":[[-9223372036854775808,1764547200000]],"failed":[{"first":1,"last":2,"error":"e"}],"journal":"t"}`,
	`{"server":"","fire":1,"kind":"scheduled","begin":1,"session":"0x1"}`,
	`{"since":1764547200000}`,
	`{"since":0}`,
	`{"since":"soon"}`,
	`{"server":"s1","jobs":{"j":{"0":[[1764547100000,1764547200000],[5,1],[0,7]],"x":[[1,2]]}}}`,
	`{"server":"s1","jobs":{"j":{"1":[[9223372036854775807,1]]},"k":null}}`,
	`{"server":"s1","jobs":{"j":{"2":[[1,2,3]]}}}`,
	"\xe9\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
	"\xe8\x00\x00\x01\x9a\x00\x00\x00\x00{}",
	"null",
	"[]",
	"",
}

// FuzzDecode: a completed record, a running or misfire mark and a
// completion journal, whatever their bytes, decode or are refused with
// ErrBadValue, without a panic; what decodes makes sense (checkDecode).
func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		for k := range kinds {
			f.Add(uint8(k), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := kinds[int(kind)%len(kinds)]
		if _, problem := checkDecode(k, data); problem != nil {
			t.Fatalf("%s %q: %v", k, data, problem)
		}
	})
}

// TestHostileValuesAreRefused: values no scheduler writes are refused
// whole, with ErrBadValue, and values it writes decode.
func TestHostileValuesAreRefused(t *testing.T) {
	huge := append([]byte(`{"server":"`), bytes.Repeat([]byte("a"), MaxValueBytes)...)
	huge = append(huge, `","fire":1,"since":1}`...)
	for _, tc := range []struct {
		kind, data string
		ok         bool
	}{
		{"completed", `{"server":"s","fire":1764547200000,"kind":"fire","begin":1,"end":2}`, true},
		{"completed", `{"server":"s","fire":0}`, false},
		{"completed", `{"server":"s","fire":253402300800000}`, false},
		{"completed", `{"server":"s","fire":1,"ran":[[1,253402300800000]]}`, false},
		{"completed", `{"server":"s","fire":1,"ran":[[1,2]],"failed":"x"}`, false},
		{"completed", string(huge), false},
		{"running", `{"server":"s","fire":1,"kind":"fire","begin":1,"session":"0x1"}`, true},
		{"running", `{"fire":1}`, false},
		{"running", string(huge), false},
		{"misfire", `{"since":1764547200000}`, true},
		{"misfire", `{"since":-1}`, false},
		{"misfire", `{"since":253402300800000}`, false},
		{"misfire", string(huge), false},
		{"journal", `{"server":"s","jobs":{}}`, true},
		{"journal", `{"server":"s","jobs":{"j":{"0":"x"}}}`, false},
		{"journal", string(huge), false},
	} {
		decoded, problem := checkDecode(tc.kind, []byte(tc.data))
		if problem != nil || decoded != tc.ok {
			t.Errorf("%s %.80q: decoded %v, want %v (%v)", tc.kind, tc.data, decoded, tc.ok, problem)
		}
	}
}

// A journal keeps only plausible runs, reads its entries by item, and
// encodes as encoding/json does, an empty one with its jobs.
func TestJournalEntries(t *testing.T) {
	d, err := DecodeJournal([]byte(`{"server":"s","jobs":{"j":{"3":[[1764547100000,1764547200000],[5,1],[0,7]],"x":[[1,2]],"4":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Entry("j", 3); len(got) != 1 || got[0] != [2]int64{1764547100000, 1764547200000} {
		t.Errorf("entry of item 3: %v", got)
	}
	if items := d.Items("j"); len(items) != 1 || items[3] == nil {
		t.Errorf("items: %v", items)
	}
	if d.Entry("k", 3) != nil {
		t.Error("an entry of a job the journal does not name")
	}
	var e Journal
	e.Server = "s"
	if got := string(e.Encode()); got != `{"server":"s","jobs":{}}` {
		t.Errorf("empty journal: %s", got)
	}
	e.Put("j", 10, [][2]int64{{1, 2}})
	e.Put("j", 9, [][2]int64{{3, 4}})
	if got := string(e.Encode()); got != `{"server":"s","jobs":{"j":{"10":[[1,2]],"9":[[3,4]]}}}` {
		t.Errorf("journal: %s", got)
	}
}

// BadValues reports each version of a node once, and again after the node
// decoded.
func TestBadValuesReportEachVersionOnce(t *testing.T) {
	var b BadValues
	if !b.First("/a", 1) || b.First("/a", 1) {
		t.Error("version 1 not reported exactly once")
	}
	if !b.First("/a", 2) {
		t.Error("version 2 not reported")
	}
	b.Good("/a")
	if !b.First("/a", 2) {
		t.Error("version 2 not reported again after the node decoded")
	}
}
