package stored

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Journal is the value of a scheduler's completion journal
// (/.journals/{token}): its server, and by job and item the fires each
// item's runs covered that the item's record may not list yet, as
// Completed.Ran stores them. Items are keyed by their decimal number.
type Journal struct {
	Server string                           `json:"server"`
	Jobs   map[string]map[string][][2]int64 `json:"jobs"`
}

// Put sets job's entry for item to ran.
func (d *Journal) Put(job string, item int, ran [][2]int64) {
	if d.Jobs == nil {
		d.Jobs = map[string]map[string][][2]int64{}
	}
	m := d.Jobs[job]
	if m == nil {
		m = map[string][][2]int64{}
		d.Jobs[job] = m
	}
	m[strconv.Itoa(item)] = ran
}

// Entry is job's entry for item: the runs of fires covered (nil if none).
func (d *Journal) Entry(job string, item int) [][2]int64 {
	return d.Jobs[job][strconv.Itoa(item)]
}

// Items is job's entries by item, leaving out keys that name no item and
// entries with no run.
func (d *Journal) Items(job string) map[int][][2]int64 {
	out := map[int][][2]int64{}
	for key, ran := range d.Jobs[job] {
		if it, err := strconv.Atoi(key); err == nil && len(ran) > 0 {
			out[it] = ran
		}
	}
	return out
}

// Encode encodes d as JSON; a journal without entries has "jobs":{}.
func (d *Journal) Encode() []byte {
	doc := *d
	if doc.Jobs == nil {
		doc.Jobs = map[string]map[string][][2]int64{}
	}
	data, _ := json.Marshal(doc) // strings and ints: cannot fail
	return data
}

// DecodeJournal decodes a completion journal, dropping runs that are not
// runs of plausible fires.
func DecodeJournal(data []byte) (Journal, error) {
	var doc Journal
	if err := decodeJSON(data, &doc, "completion journal"); err != nil {
		return Journal{}, err
	}
	for _, items := range doc.Jobs {
		for it, ran := range items {
			keep := ran[:0]
			for _, s := range ran {
				if validMillis(s[0]) && validMillis(s[1]) && s[0] <= s[1] {
					keep = append(keep, s)
				}
			}
			items[it] = keep
		}
	}
	return doc, nil
}

// JournalEntry is one item's entry of a completion journal: the fires
// its runs covered, as Completed.Ran stores them.
type JournalEntry struct {
	Job  string
	Item int
	Ran  [][2]int64
}

// EncodeJournal encodes the journal of server holding entries (one per
// job and item) as Journal.Encode does, but for the order of the items —
// by number here, as strings there — without building its maps or
// reflecting on them: a completion of ten thousand items writes the
// journal at once, and the maps' encoding was a tenth of the fire's CPU.
// It sorts entries.
func EncodeJournal(server string, entries []JournalEntry) []byte {
	slices.SortFunc(entries, func(a, b JournalEntry) int {
		if c := strings.Compare(a.Job, b.Job); c != 0 {
			return c
		}
		return cmp.Compare(a.Item, b.Item)
	})
	n := 32 + len(server)
	for _, e := range entries {
		n += len(e.Job) + 16 + 30*len(e.Ran)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"server":`...)
	b = appendJSONString(b, server)
	b = append(b, `,"jobs":{`...)
	for i, e := range entries {
		switch {
		case i == 0:
		case e.Job != entries[i-1].Job:
			b = append(b, "},"...)
		default:
			b = append(b, ',')
		}
		if i == 0 || e.Job != entries[i-1].Job {
			b = appendJSONString(b, e.Job)
			b = append(b, ":{"...)
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(e.Item), 10)
		b = append(b, `":`...)
		if e.Ran == nil {
			b = append(b, "null"...)
			continue
		}
		b = appendRan(b, e.Ran)
	}
	if len(entries) > 0 {
		b = append(b, '}')
	}
	return append(b, "}}"...)
}
