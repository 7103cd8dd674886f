// Package itemkeys keeps the item keys of a job whose items come from data
// (job.ItemLister): the list of keys its item source returned, each key
// given an item number, as the leader stores it in the job's item-keys
// node (layout.Job.ItemKeys) and every instance reads it at a fire.
//
// A key keeps its item while it is listed, so that placement, which is
// sticky by item, is sticky by key: a list that gains or loses keys moves
// no other key. A new key takes the item it had before, when it was
// listed recently and that item is free, else the lowest free item; an
// item whose key left is free. The list has room for the job's item count
// (ShardingTotalCount) of keys.
//
// A list takes effect from a fire on (List.From): the leader reads the
// source ahead of a fire, and every instance runs that fire with the same
// list, the one in force at the fire's time; the list before it is kept
// for the fires before (a make-up run of an older fire).
//
// The room holds the list and its document (this file), the leader's
// reading of the source ahead of each fire and a fire's read of the list
// in force (Lister, Read: lister.go). It calls the registry and layout,
// nothing of package job.
package itemkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of a list.
const (
	// MaxKeyLength is the longest key, in bytes.
	MaxKeyLength = 256
	// MaxDocBytes is the most bytes the stored document may take: the
	// registries' node limits (ZooKeeper's jute.maxbuffer is 1 MiB) with
	// room to spare.
	MaxDocBytes = 768 << 10
	// MaxRemembered is how many keys that left the list remember their
	// item, so that a key listed again gets it back.
	MaxRemembered = 256
)

// Errors of a list. A list that has one is not stored: the last list
// stays in force.
var (
	// ErrInvalidKey: a key is empty, too long, not UTF-8, has a control
	// character, or is listed twice.
	ErrInvalidKey = errors.New("invalid item key")
	// ErrTooMany: more keys than the job has items.
	ErrTooMany = errors.New("more item keys than items")
	// ErrTooLarge: the stored document would exceed MaxDocBytes.
	ErrTooLarge = errors.New("item key list too large")
	// ErrBadDoc: the stored document does not decode.
	ErrBadDoc = errors.New("item key document does not decode")
)

// List is one list of keys: Keys[i] is item i's key, "" for an item
// without one. From is the first fire it is in force for (zero: every
// fire).
type List struct {
	From time.Time
	Keys []string
}

// Doc is the stored document: the list in force from Cur.From on, the
// one before it, and the items of keys that left recently.
type Doc struct {
	Cur  List
	Prev List
	// Gone maps a key that left to the item it had, at most
	// MaxRemembered of them (the most recent).
	Gone map[string]int
	// GoneOrder is Gone's keys, oldest first.
	GoneOrder []string
}

// At returns the keys in force for a fire at t: Cur's when t is at or
// after Cur.From, else Prev's (nil when there is none).
func (d Doc) At(t time.Time) []string {
	if d.Cur.From.IsZero() || !t.Before(d.Cur.From) {
		return d.Cur.Keys
	}
	return d.Prev.Keys
}

// Count returns how many keys l has.
func (l List) Count() int {
	n := 0
	for _, k := range l.Keys {
		if k != "" {
			n++
		}
	}
	return n
}

// Change is what Assign did to the keys.
type Change struct {
	Added, Removed []string
}

// Same reports whether nothing changed.
func (c Change) Same() bool { return len(c.Added) == 0 && len(c.Removed) == 0 }

// CheckKey returns why k cannot be a key, or nil.
func CheckKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(k) > MaxKeyLength:
		return fmt.Errorf("%w: %.40q…: %d bytes, more than %d", ErrInvalidKey, k, len(k), MaxKeyLength)
	case !utf8.ValidString(k):
		return fmt.Errorf("%w: %.40q: not UTF-8", ErrInvalidKey, k)
	case strings.IndexFunc(k, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %.40q: has a control character", ErrInvalidKey, k)
	}
	return nil
}

// Assign returns the document that gives keys, a new list read from the
// source, items next to d's, in force from from; total is the job's item
// count. A key listed in d.Cur keeps its item. It fails, changing
// nothing, on an invalid or repeated key, more keys than total, or a
// document over MaxDocBytes.
func Assign(d Doc, keys []string, total int, from time.Time) (Doc, Change, error) {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return Doc{}, Change{}, err
		}
		if seen[k] {
			return Doc{}, Change{}, fmt.Errorf("%w: %.40q is listed twice", ErrInvalidKey, k)
		}
		seen[k] = true
	}
	if len(keys) > total {
		return Doc{}, Change{}, fmt.Errorf("%w: %d keys, the job has %d items (shardingTotalCount)", ErrTooMany, len(keys), total)
	}
	cur := make([]string, total)
	held := map[string]int{}
	for i, k := range d.Cur.Keys {
		if k != "" && i < total && seen[k] {
			cur[i], held[k] = k, i
		}
	}
	var ch Change
	gone, order := map[string]int{}, []string{}
	for _, k := range d.GoneOrder {
		if it, ok := d.Gone[k]; ok && !seen[k] {
			gone[k], order = it, append(order, k)
		}
	}
	for i, k := range d.Cur.Keys {
		if k != "" && !seen[k] {
			ch.Removed = append(ch.Removed, k)
			if _, ok := gone[k]; !ok {
				order = append(order, k)
			}
			gone[k] = i
		}
	}
	// New keys in sorted order, so that the same lists give the same
	// items whatever order the source returned them in.
	var fresh []string
	for _, k := range keys {
		if _, ok := held[k]; !ok {
			fresh = append(fresh, k)
		}
	}
	slices.Sort(fresh)
	free := 0
	for _, k := range fresh {
		if it, ok := d.Gone[k]; ok && it >= 0 && it < total && cur[it] == "" {
			cur[it] = k
		} else {
			for cur[free] != "" {
				free++
			}
			cur[free] = k
		}
		ch.Added = append(ch.Added, k)
	}
	slices.Sort(ch.Removed)
	if len(order) > MaxRemembered {
		for _, k := range order[:len(order)-MaxRemembered] {
			delete(gone, k)
		}
		order = order[len(order)-MaxRemembered:]
	}
	if ch.Same() && len(d.Cur.Keys) == total {
		return d, ch, nil // nothing to store
	}
	out := Doc{Cur: List{From: from, Keys: cur}, Prev: d.Cur, Gone: gone, GoneOrder: order}
	data, err := Encode(out)
	if err != nil {
		return Doc{}, Change{}, err
	}
	if len(data) > MaxDocBytes {
		return Doc{}, Change{}, fmt.Errorf("%w: %d bytes stored, more than %d", ErrTooLarge, len(data), MaxDocBytes)
	}
	return out, ch, nil
}

// stored is Doc as JSON: times in Unix milliseconds (as strings, as the
// registry's other records), keys as item-indexed arrays.
type stored struct {
	From     string       `json:"from,omitempty"`
	Keys     []string     `json:"keys"`
	PrevFrom string       `json:"prevFrom,omitempty"`
	Prev     []string     `json:"prev,omitempty"`
	Gone     []storedGone `json:"gone,omitempty"`
}

type storedGone struct {
	Key  string `json:"key"`
	Item int    `json:"item"`
}

func millis(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

func parseMillis(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, fmt.Errorf("time %.20q is not Unix milliseconds", s)
	}
	return time.UnixMilli(ms), nil
}

// Encode returns d as stored.
func Encode(d Doc) ([]byte, error) {
	s := stored{From: millis(d.Cur.From), Keys: d.Cur.Keys, PrevFrom: millis(d.Prev.From), Prev: d.Prev.Keys}
	if s.Keys == nil {
		s.Keys = []string{}
	}
	for _, k := range d.GoneOrder {
		if it, ok := d.Gone[k]; ok {
			s.Gone = append(s.Gone, storedGone{Key: k, Item: it})
		}
	}
	return json.Marshal(s)
}

// Decode reads a stored document. It fails with ErrBadDoc on anything
// Encode would not have written: bad JSON, bad times, invalid or repeated
// keys, more entries than MaxItems. A list longer than the job's items
// (its count was lowered since) is read whole: the items beyond the count
// are not the job's, and the leader's next list gives their keys items.
func Decode(data []byte) (Doc, error) {
	if len(data) > MaxDocBytes {
		return Doc{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadDoc, len(data), MaxDocBytes)
	}
	var s stored
	if err := json.Unmarshal(data, &s); err != nil {
		return Doc{}, fmt.Errorf("%w: %w", ErrBadDoc, err)
	}
	var d Doc
	var err error
	if d.Cur.From, err = parseMillis(s.From); err != nil {
		return Doc{}, fmt.Errorf("%w: from: %w", ErrBadDoc, err)
	}
	if d.Prev.From, err = parseMillis(s.PrevFrom); err != nil {
		return Doc{}, fmt.Errorf("%w: prevFrom: %w", ErrBadDoc, err)
	}
	for _, l := range []struct {
		name string
		keys []string
		to   *[]string
	}{{"keys", s.Keys, &d.Cur.Keys}, {"prev", s.Prev, &d.Prev.Keys}} {
		if len(l.keys) > MaxItems {
			return Doc{}, fmt.Errorf("%w: %s: %d entries", ErrBadDoc, l.name, len(l.keys))
		}
		seen := map[string]bool{}
		for _, k := range l.keys {
			if k == "" {
				continue
			}
			if err := CheckKey(k); err != nil {
				return Doc{}, fmt.Errorf("%w: %s: %w", ErrBadDoc, l.name, err)
			}
			if seen[k] {
				return Doc{}, fmt.Errorf("%w: %s: %.40q twice", ErrBadDoc, l.name, k)
			}
			seen[k] = true
		}
		*l.to = l.keys
	}
	if len(s.Gone) > MaxRemembered {
		return Doc{}, fmt.Errorf("%w: gone: %d entries", ErrBadDoc, len(s.Gone))
	}
	d.Gone = map[string]int{}
	for _, g := range s.Gone {
		if CheckKey(g.Key) != nil || g.Item < 0 || g.Item >= MaxItems {
			return Doc{}, fmt.Errorf("%w: gone: %.40q at item %d", ErrBadDoc, g.Key, g.Item)
		}
		if _, dup := d.Gone[g.Key]; !dup {
			d.GoneOrder = append(d.GoneOrder, g.Key)
		}
		d.Gone[g.Key] = g.Item
	}
	return d, nil
}

// MaxItems is the most items a job has (job.MaxShardingTotalCount).
const MaxItems = 10000
