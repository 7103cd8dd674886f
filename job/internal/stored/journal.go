package stored

import (
	"encoding/json"
	"strconv"
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
