// Package layout names the ZooKeeper nodes of a job, relative to the
// namespace root. It is the one place the node layout of docs/zookeeper.md
// is spelled out in code.
package layout

import (
	"strconv"
	"strings"

	"github.com/shardjob/shardjob/regcenter"
)

// Job is the node layout of one job.
type Job string

// Root is the job's node.
func (j Job) Root() string { return "/" + string(j) }

// Config holds the job's configuration as one YAML document.
func (j Job) Config() string { return "/" + string(j) + "/config" }

// Servers is the parent of every server's node.
func (j Job) Servers() string { return "/" + string(j) + "/servers" }

// Server is one server's node.
func (j Job) Server(id string) string { return "/" + string(j) + "/servers/" + id }

// Flag is a child of a server's node: status, disabled, paused, shutdown,
// trigger, backfill or sharding.
func (j Job) Flag(id, flag string) string { return "/" + string(j) + "/servers/" + id + "/" + flag }

// Server flag names.
const (
	Status   = "status"
	Disabled = "disabled"
	Paused   = "paused"
	Shutdown = "shutdown"
	Trigger  = "trigger"
	Sharding = "sharding"
	// BackfillFlag asks the instance to run the job's backfill
	// (Backfill): set for every online server when one starts or resumes.
	BackfillFlag = "backfill"
)

// Status values.
const (
	StatusReady   = "READY"
	StatusRunning = "RUNNING"
)

// Execution is the parent of every item's execution node.
func (j Job) Execution() string { return "/" + string(j) + "/execution" }

// Item is one item's execution node.
func (j Job) Item(item int) string { return "/" + string(j) + "/execution/" + strconv.Itoa(item) }

// ItemNode is a child of an item's execution node: running, completed,
// failover, misfire, retry or disabled.
//
// Like every path here it is built in one concatenation (one allocation):
// the fire path names several item nodes per run.
func (j Job) ItemNode(item int, node string) string {
	return "/" + string(j) + "/execution/" + strconv.Itoa(item) + "/" + node
}

// Item node names.
const (
	Running   = "running"
	Completed = "completed"
	Failover  = "failover"
	Misfire   = "misfire"
	// Retry (persistent) holds the failed attempts of the fire an item's
	// owner waits to retry, written before the wait: whoever takes the
	// fire over after a crash continues the count.
	Retry = "retry"
)

// Leader is the parent of the leader's nodes.
func (j Job) Leader() string { return j.Root() + "/leader" }

// ElectionLatch holds the candidates' ephemeral sequential nodes.
func (j Job) ElectionLatch() string { return j.Leader() + "/election/latch" }

// ElectionHost holds the leader's server id (ephemeral).
func (j Job) ElectionHost() string { return j.Leader() + "/election/host" }

// Necessary flags that a reshard is due before the next fire.
func (j Job) Necessary() string { return j.Leader() + "/sharding/necessary" }

// ShardingEpoch is the parent of Necessary and always present: whoever
// flags a reshard sets its data in the same transaction, so its version
// moves whenever a reshard becomes due. A fire that checks the version it
// last read proves in its own transaction that no reshard is due.
func (j Job) ShardingEpoch() string { return j.Leader() + "/sharding" }

// FlagReshardOps are the operations that flag a reshard: the flag and a
// move of the epoch (see ShardingEpoch). They fail with ErrNoNode when the
// job's tree is gone and ErrNodeExists when a reshard is already due.
func (j Job) FlagReshardOps() []regcenter.Op {
	return []regcenter.Op{
		regcenter.CreateOp{Path: j.Necessary()},
		regcenter.SetOp{Path: j.ShardingEpoch(), Version: -1},
	}
}

// Processing exists while the leader reshards (ephemeral).
func (j Job) Processing() string { return j.Leader() + "/sharding/processing" }

// FailoverItems is the queue of a crashed instance's items.
func (j Job) FailoverItems() string { return j.Leader() + "/failover/items" }

// FailoverItem is one queued item.
func (j Job) FailoverItem(item int) string {
	return "/" + string(j) + "/leader/failover/items/" + strconv.Itoa(item)
}

// Backfill holds the job's backfill request (internal/backfill), and
// each item's progress in it as a child (BackfillItem).
func (j Job) Backfill() string { return j.Root() + "/backfill" }

// TellBackfillOps are the operations that raise the backfill flag of
// each server of ids but except: creates, each failing with
// ErrNodeExists where the flag is up already.
func (j Job) TellBackfillOps(ids []string, except string) []regcenter.Op {
	ops := make([]regcenter.Op, 0, len(ids))
	for _, id := range ids {
		if id != except {
			ops = append(ops, regcenter.CreateOp{Path: j.Flag(id, BackfillFlag), Mode: regcenter.Persistent})
		}
	}
	return ops
}

// BackfillItem is an item's progress in the job's backfill.
func (j Job) BackfillItem(item int) string { return j.Root() + "/backfill/" + strconv.Itoa(item) }

// ItemKeys holds the item keys of a job whose items come from data
// (job.ItemLister): the leader's list, each key with its item
// (job/internal/itemkeys).
func (j Job) ItemKeys() string { return j.Root() + "/item-keys" }

// DisabledItems holds the items kept out of every fire, as "3,5".
func (j Job) DisabledItems() string { return j.Root() + "/disabled-items" }

// Definition holds a job created at run time (over the HTTP API) as its
// YAML job document: one entry of a job file's jobs: list, a script or
// http job with its section. Instances that follow the namespace's
// definitions (jobfile.Follow) build and run it; a job defined in a
// program or a job file has none. Removing the job deletes it with the
// rest of the job's tree.
func (j Job) Definition() string { return j.Root() + "/definition" }

// FormatItems renders ascending items as ElasticJob does, "0,1,5", with
// every run of three or more consecutive items as a range: "0-332,340".
// A job of thousands of items held in a few blocks has an assignment of a
// few bytes.
func FormatItems(items []int) string {
	var b strings.Builder
	for i := 0; i < len(items); {
		j := i
		for j+1 < len(items) && items[j+1] == items[j]+1 {
			j++
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(items[i]))
		switch {
		case j-i >= 2:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(items[j]))
		case j == i+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(items[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MaxListItems bounds how many items an item list may expand to: a list
// is never longer than a job's item count, and a garbage range such as
// "0-2147483647" must not make a reader allocate gigabytes.
const MaxListItems = 1 << 20

// ParseItems parses "0,1,2" and ranges "0-332" (spaces allowed around the
// numbers, empty means none). A list that expands to more than
// MaxListItems items is refused.
func ParseItems(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		lo, hi, isRange := strings.Cut(p, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, &ItemsError{Text: s}
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, &ItemsError{Text: s}
			}
		}
		if b-a >= MaxListItems-len(out) {
			return nil, &ItemsError{Text: s, TooMany: true}
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out, nil
}

// ItemsError reports an item list that is not "0,1,2" or "0-2", or
// expands to more than MaxListItems items.
type ItemsError struct {
	Text    string
	TooMany bool
}

func (e *ItemsError) Error() string {
	text := e.Text
	if len(text) > 64 {
		text = text[:64] + "..."
	}
	if e.TooMany {
		return "layout: item list " + strconv.Quote(text) + " has more than " + strconv.Itoa(MaxListItems) + " items"
	}
	return "layout: item list " + strconv.Quote(text) + " is not comma-separated non-negative integers or ranges a-b"
}

// Namespace-level nodes. Their names begin with '.', which no job name may,
// so they never collide with a job.
const (
	// Placement holds the namespace's load table: the units each server
	// holds across every job, and how many are unplaced (JSON). Every
	// reshard updates it in its own transaction, over the version it read.
	Placement = "/.placement"
	// Instances is the parent of every live instance's node.
	Instances = Placement + "/instances"
	// DrainList is the parent of the drain list's entries.
	DrainList = Placement + "/drain"
	// Offline is the parent of the instances marked offline by failed
	// health checks.
	Offline = Placement + "/offline"
	// Probes is the parent of the peers' probe failure counters.
	Probes = Placement + "/probes"
)

// Probe is a server's probe failure counter (persistent): the failed
// probes of its health endpoint in a row, by any peer, in decimal.
func Probe(id string) string { return Probes + "/" + id }

// Instance is a live instance's node (ephemeral): its settings and load
// score as JSON.
func Instance(id string) string { return Instances + "/" + id }

// Drain is a server's entry in the drain list (persistent).
func Drain(id string) string { return DrainList + "/" + id }

// OfflineEntry marks a server offline (persistent, removed when its health
// check passes again).
func OfflineEntry(id string) string { return Offline + "/" + id }

// Unplaced holds the job's items that no server may take (caps), as
// "3,5"; absent when there are none.
func (j Job) Unplaced() string { return j.Root() + "/unplaced" }

// Journals is the parent of the processes' completion journals (package
// job): one persistent node per process, named by its token, holding the
// fires its held items completed that their records may not list yet.
const Journals = "/.journals"

// Journal is process's completion journal.
func Journal(process string) string { return Journals + "/" + process }

// Namespace-level nodes of the jobs defined at run time (package jobfile).
const (
	// Definitions indexes the jobs defined at run time: one empty child
	// per job whose definition was stored through jobfile.Define, written
	// in the definition's own transaction, so that their number is one
	// read (the limit on definitions per namespace). Near the limit,
	// Define bumps the node's version in that transaction too, so that
	// two definitions stored at once are counted one after the other.
	Definitions = "/.definitions"
	// Followers holds, per job type, an ephemeral child for each live
	// instance that follows that type's definitions (jobfile.Follow):
	// /.followers/http/{server}, /.followers/script/{server}.
	Followers = "/.followers"
)

// DefinitionEntry is job's entry in the index of definitions.
func DefinitionEntry(job string) string { return Definitions + "/" + job }

// FollowersOf is the parent of the announcements of the instances that
// follow definitions of type typ.
func FollowersOf(typ string) string { return Followers + "/" + typ }

// Follower is server's announcement that it follows definitions of type
// typ (ephemeral).
func Follower(typ, server string) string { return FollowersOf(typ) + "/" + server }
