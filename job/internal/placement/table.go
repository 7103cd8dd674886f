package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
)

// The namespace's load table (layout.Placement): the books placement keeps
// of which server holds how many units. They are kept per job: each job's
// entry is what its assignment nodes say, replaced whole by the transaction
// that writes those nodes (a reshard) or by a repair that read them under
// the same fence; nothing is ever added to or subtracted from an entry. A
// server's units, the units unplaced and K are sums over the entries,
// derived each time they are asked for, so the books cannot drift from the
// assignments the way a counter table updated by differences does (an
// instance that left and came back under the same id was counted twice).

// jobUnits is one job's entry: its units per server, and those unplaced.
type jobUnits struct {
	servers  map[string]int
	unplaced int
}

func (u jobUnits) clone() jobUnits {
	return jobUnits{servers: maps.Clone(u.servers), unplaced: u.unplaced}
}

func (u jobUnits) equal(o jobUnits) bool {
	return u.unplaced == o.unplaced && maps.Equal(nonZero(u.servers), nonZero(o.servers))
}

// total is every unit of the job, placed or not.
func (u jobUnits) total() int {
	n := u.unplaced
	for _, c := range u.servers {
		n += c
	}
	return n
}

func nonZero(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// unitsOf counts an assignment and its unplaced items as an entry.
func unitsOf(assign map[string][]int, unplaced []int) jobUnits {
	u := jobUnits{servers: map[string]int{}, unplaced: len(unplaced)}
	for s, items := range assign {
		if len(items) > 0 {
			u.servers[s] = len(items)
		}
	}
	return u
}

// Table is the namespace's load table, the payload of layout.Placement.
// Package job reads what it says of a server (Units) and of the units
// unplaced (Unplaced); the placer and the operator's verbs of this package
// write it.
type Table struct {
	// jobs holds each job's entry.
	jobs map[string]jobUnits
	// joined numbers the servers in the order they first held units
	// (sharding.Input.Joined); seq is the last number given. A server
	// holding nothing leaves joined.
	joined map[string]int
	seq    int
	// perServer and unplaced are the sums over jobs, kept by set (the
	// only writer of jobs once a table is made) so that a reshard's
	// placement costs the servers, not the namespace's jobs.
	perServer map[string]int
	unplaced  int
	// wireBytes is the size of the encoding it was decoded from or last
	// written as (0: not known), for sizing a transaction (entryBytes).
	wireBytes int
}

func newTable() Table {
	return Table{jobs: map[string]jobUnits{}, joined: map[string]int{}, perServer: map[string]int{}}
}

// sum computes perServer and unplaced from the entries.
func (t *Table) sum() {
	t.perServer, t.unplaced = map[string]int{}, 0
	for _, u := range t.jobs {
		t.add(u, 1)
	}
}

// add adds an entry's units to the sums (sign 1) or takes them out (-1).
func (t *Table) add(u jobUnits, sign int) {
	for s, n := range u.servers {
		if n <= 0 {
			continue
		}
		if t.perServer[s] += sign * n; t.perServer[s] <= 0 {
			delete(t.perServer, s)
		}
	}
	t.unplaced += sign * u.unplaced
}

// Units is what each server holds across the namespace: only servers
// holding units are listed.
func (t Table) Units() map[string]int {
	out := maps.Clone(t.perServer)
	if out == nil {
		out = map[string]int{}
	}
	return out
}

// unitsWithout is units without job's entry.
func (t Table) unitsWithout(job string) map[string]int {
	out := t.Units()
	for s, n := range t.jobs[job].servers {
		if out[s] -= n; out[s] <= 0 {
			delete(out, s)
		}
	}
	return out
}

// Unplaced counts the units no server may take.
func (t Table) Unplaced() int { return t.unplaced }

// total is K: every unit of the namespace, placed or not.
func (t Table) total() int {
	k := t.unplaced
	for _, n := range t.perServer {
		k += n
	}
	return k
}

func (t Table) clone() Table {
	c := Table{jobs: make(map[string]jobUnits, len(t.jobs)), joined: maps.Clone(t.joined), seq: t.seq,
		perServer: maps.Clone(t.perServer), unplaced: t.unplaced}
	for j, u := range t.jobs {
		c.jobs[j] = u.clone()
	}
	if c.joined == nil {
		c.joined = map[string]int{}
	}
	if c.perServer == nil {
		c.perServer = map[string]int{}
	}
	return c
}

// set replaces job's entry (an empty one removes it) and renumbers the
// servers that start or stop holding units. It costs the servers of the
// two entries, not the table's size.
func (t *Table) set(job string, u jobUnits) {
	if t.jobs == nil {
		t.jobs = map[string]jobUnits{}
	}
	if t.joined == nil {
		t.joined = map[string]int{}
	}
	if t.perServer == nil {
		t.sum()
	}
	old := t.jobs[job]
	t.add(old, -1)
	if u.total() == 0 {
		delete(t.jobs, job)
	} else {
		u = jobUnits{servers: nonZero(u.servers), unplaced: u.unplaced}
		t.jobs[job] = u
		t.add(u, 1)
	}
	var touched []string
	for s := range old.servers {
		touched = append(touched, s)
	}
	for s := range u.servers {
		touched = append(touched, s)
	}
	t.renumber(touched)
}

// renumber gives a number to every server of servers newly holding units,
// in order of id, and takes it from every one holding none.
func (t *Table) renumber(servers []string) {
	slices.Sort(servers)
	for _, s := range slices.Compact(servers) {
		_, numbered := t.joined[s]
		switch {
		case t.perServer[s] > 0 && !numbered:
			t.seq++
			t.joined[s] = t.seq
		case t.perServer[s] <= 0 && numbered:
			delete(t.joined, s)
		}
	}
}

// decodes counts DecodeTable's calls (Decodes).
var decodes atomic.Int64

// Decodes reports how many times this process has decoded a load table:
// each costs the whole namespace, so the placer and the reconcile round
// are measured in them (their tests count them).
func Decodes() int64 { return decodes.Load() }

// ErrTableGarbage reports a namespace load table (/.placement) that is not
// valid: package job's ErrTableGarbage, the same value. Reshards rebuild
// it from the jobs' assignments; reading the namespace's placement
// (ReadNamespace) returns it.
var ErrTableGarbage = errors.New("job: the namespace's load table is not valid")

// MaxJobUnits is the most units a job's entry may count on one server or
// unplaced: job.MaxShardingTotalCount, which package job's tests check.
const MaxJobUnits = 10000

// ServerIDPattern is what a server id is: 1-128 characters from
// [A-Za-z0-9._:@-]. Package job checks the ids it is given by it, and a
// table listing another is refused.
var ServerIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)

// tableWire is the table as stored: the servers once, in order, and each
// job's units as counts in that order, so that a namespace of 10,000
// one-item jobs stays well under the node size limit.
type tableWire struct {
	// Servers lists the servers holding units, sorted.
	Servers []string `json:"servers"`
	// Joined is each server's number, in the order of Servers.
	Joined []int `json:"joined"`
	Seq    int   `json:"seq"`
	// Jobs holds each job's units on each server, in the order of Servers
	// (trailing zeros left out).
	Jobs map[string][]int `json:"jobs"`
	// Unplaced holds each job's units no server may take, for the jobs
	// that have any.
	Unplaced map[string]int `json:"unplaced,omitempty"`
}

// entryBytes bounds what one job's entry adds to the encoding: its name
// twice (counts and unplaced), quoted, and a count of up to five digits
// per server.
func (t Table) entryBytes(job string) int {
	return 2*(len(job)+4) + 6*(len(t.perServer)+1) + 8
}

func (t Table) encode() []byte {
	units := t.Units()
	w := tableWire{Servers: slices.Sorted(maps.Keys(units)), Seq: t.seq, Jobs: map[string][]int{}}
	at := make(map[string]int, len(w.Servers))
	for i, s := range w.Servers {
		at[s] = i
		w.Joined = append(w.Joined, t.joined[s])
	}
	for j, u := range t.jobs {
		var counts []int
		for s, n := range u.servers {
			if n <= 0 {
				continue
			}
			for len(counts) <= at[s] {
				counts = append(counts, 0)
			}
			counts[at[s]] = n
		}
		w.Jobs[j] = counts
		if u.unplaced > 0 {
			if w.Unplaced == nil {
				w.Unplaced = map[string]int{}
			}
			w.Unplaced[j] = u.unplaced
		}
	}
	b, _ := json.Marshal(w) // maps of ints and strings: cannot fail
	return b
}

// DecodeTable decodes a load table. Its error wraps ErrTableGarbage: the
// value is not JSON of the table's shape, or says what no table says (a
// server id that is not valid or listed twice, a join number out of
// range, a server listed holding nothing, a count below 0 or above
// MaxJobUnits).
func DecodeTable(data []byte) (Table, error) {
	decodes.Add(1)
	if len(data) == 0 {
		return Table{}, fmt.Errorf("%w: empty", ErrTableGarbage)
	}
	var w tableWire
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Table{}, fmt.Errorf("%w: %v", ErrTableGarbage, err)
	}
	if len(w.Joined) != len(w.Servers) {
		return Table{}, fmt.Errorf("%w: %d servers but %d join numbers", ErrTableGarbage, len(w.Servers), len(w.Joined))
	}
	t := newTable()
	t.seq = w.Seq
	for i, s := range w.Servers {
		n := w.Joined[i]
		if !ServerIDPattern.MatchString(s) {
			return Table{}, fmt.Errorf("%w: server %q", ErrTableGarbage, s)
		}
		if _, dup := t.joined[s]; dup {
			return Table{}, fmt.Errorf("%w: server %q listed twice", ErrTableGarbage, s)
		}
		if n < 1 || n > w.Seq {
			return Table{}, fmt.Errorf("%w: server %q joined at %d (seq %d)", ErrTableGarbage, s, n, w.Seq)
		}
		t.joined[s] = n
	}
	for j, counts := range w.Jobs {
		if len(counts) > len(w.Servers) {
			return Table{}, fmt.Errorf("%w: job %q has %d counts for %d servers", ErrTableGarbage, j, len(counts), len(w.Servers))
		}
		u := jobUnits{servers: map[string]int{}}
		for i, n := range counts {
			if n < 0 || n > MaxJobUnits {
				return Table{}, fmt.Errorf("%w: job %q holds %d units on %q", ErrTableGarbage, j, n, w.Servers[i])
			}
			if n > 0 {
				u.servers[w.Servers[i]] = n
			}
		}
		t.jobs[j] = u
	}
	for j, n := range w.Unplaced {
		if n < 0 || n > MaxJobUnits {
			return Table{}, fmt.Errorf("%w: job %q has %d units unplaced", ErrTableGarbage, j, n)
		}
		u := t.jobs[j]
		u.unplaced = n
		t.jobs[j] = u
	}
	for j, u := range t.jobs {
		if u.total() == 0 {
			delete(t.jobs, j)
		}
	}
	t.sum()
	for s := range t.joined {
		if t.perServer[s] == 0 {
			return Table{}, fmt.Errorf("%w: server %q listed holding nothing", ErrTableGarbage, s)
		}
	}
	t.wireBytes = len(data)
	return t, nil
}
