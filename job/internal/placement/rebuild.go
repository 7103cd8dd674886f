package placement

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/internal/parallel"
	"github.com/shardjob/shardjob/regcenter"
)

// The load table rebuilt from the jobs' assignment nodes, when the node is
// missing, empty or garbage. A namespace of thousands of jobs takes one
// read per job and per server holding a job's assignment node: read one
// job after another that outlasted a reshard's timeout, and a rebuild that
// began again with every reshard never finished. So the reads go
// rebuildReads at a time; what is read is kept by the placer across
// commits (a rebuild cut off resumes where it stopped); the rebuilt table
// is written on its own as soon as it is complete, whether or not the
// reshards that asked for it still wait; and a rebuild stops as soon as
// another instance's table is there.
//
// Why the entries read stay true until the table is written: an
// assignment changes only by a reshard, which commits with the table (and
// none has: the node would hold a table), or by a clear outside a reshard
// (an instance leaving, a departure queued for failover), whose maker
// repairs the job's entry through its placer once the table is there; a
// repair that did not happen is made by the job's leader at its next
// reconcile round, or by ReviewBooks.

// rebuildReads is how many jobs are read at once; rebuildChunk how many
// are read between two looks at the table node.
const (
	rebuildReads = 16
	rebuildChunk = 512
)

// rebuild is a rebuild in progress: the entries read so far and the jobs
// left to read.
type rebuild struct {
	table Table
	todo  []string
	read  int
}

// errTableMoved reports that the table node changed during a rebuild: it
// is read again at once (it may hold another instance's table now).
var errTableMoved = fmt.Errorf("the load table changed while it was being rebuilt: %w", regcenter.ErrBadVersion)

// rebuildTable resumes or begins the rebuild, and writes the table over
// the node as read (version -1: no node; st its stat otherwise). It
// returns the table and the node's version after the write.
func (p *Placer) rebuildTable(ctx context.Context, version int32, st regcenter.Stat) (Table, int32, error) {
	if p.scan == nil {
		jobs, err := namespaceJobs(ctx, p.rc)
		if err != nil {
			return Table{}, 0, err
		}
		p.scan = &rebuild{table: newTable(), todo: jobs}
		p.log.Info("rebuilding the namespace's load table from the jobs' assignments", "jobs", len(jobs))
	}
	sc := p.scan
	for len(sc.todo) > 0 {
		chunk := sc.todo[:min(len(sc.todo), rebuildChunk)]
		units := make([]jobUnits, len(chunk))
		errs := make([]error, len(chunk))
		parallel.Each(len(chunk), rebuildReads, func(i int) {
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			u, err := JobUnits(ctx, p.rc, chunk[i])
			units[i], errs[i] = jobUnits{servers: u.PerServer, unplaced: u.Unplaced}, err
		})
		// Keep what was read; what failed is read again.
		var failed []string
		var firstErr error
		for i, err := range errs {
			if err != nil {
				failed = append(failed, chunk[i])
				firstErr = cmp.Or(firstErr, err)
				continue
			}
			sc.table.set(chunk[i], units[i])
			sc.read++
		}
		sc.todo = append(failed, sc.todo[len(chunk):]...)
		if firstErr != nil {
			return Table{}, 0, fmt.Errorf("rebuilding the load table (%d jobs read, %d to go): %w", sc.read, len(sc.todo), firstErr)
		}
		if len(sc.todo) == 0 {
			break
		}
		ok, now, err := p.rc.Exists(ctx, layout.Placement)
		if err != nil {
			return Table{}, 0, err
		}
		if ok != (version >= 0) || (ok && (now.Czxid != st.Czxid || now.Version != st.Version)) {
			return Table{}, 0, errTableMoved
		}
	}
	t := sc.table
	data := t.encode()
	t.wireBytes = len(data)
	var err error
	if version < 0 {
		_, err = p.rc.Create(ctx, layout.Placement, data, regcenter.Persistent)
	} else {
		_, err = p.rc.Set(ctx, layout.Placement, data, version)
	}
	switch {
	case errors.Is(err, regcenter.ErrNodeExists), errors.Is(err, regcenter.ErrBadVersion):
		return Table{}, 0, errTableMoved
	case err != nil:
		return Table{}, 0, fmt.Errorf("writing the rebuilt load table: %w", err)
	}
	p.scan = nil
	p.log.Info("rebuilt the namespace's load table", "jobs", sc.read, "units", t.total(), "bytes", len(data))
	if version < 0 {
		p.known = knownTable{}
		return t, 0, nil
	}
	p.known = knownTable{ok: true, table: t, czxid: st.Czxid, version: version + 1}
	return t, version + 1, nil
}

// SeedTable writes the empty load table when the namespace's root, as
// children lists its nodes, holds no job, and the table's node is missing
// or empty (it is the instances' parent too: an instance's start makes
// it): a new namespace. Its first reshards would otherwise each find no
// table and rebuild it, reading every job — hundreds of reads, on every
// instance starting at once, right before the jobs' first fires. Empty is
// exact: a job is made with no assignment, and an assignment is written
// only by a reshard, whose transaction writes the table too; one that
// committed since the listing moved the node's version, and this write,
// over the version read, leaves its table as it is. It writes nothing
// otherwise; a table it did not write is rebuilt as before, by the first
// reshard.
func SeedTable(ctx context.Context, rc regcenter.Center, children []string) error {
	for _, n := range children {
		if !strings.HasPrefix(n, ".") {
			return nil // a job
		}
	}
	data, st, err := rc.Get(ctx, layout.Placement)
	switch {
	case errors.Is(err, regcenter.ErrNoNode):
		_, err = rc.Create(ctx, layout.Placement, newTable().encode(), regcenter.Persistent)
	case err != nil || len(data) > 0:
	default:
		_, err = rc.Set(ctx, layout.Placement, newTable().encode(), st.Version)
	}
	if err != nil && !errors.Is(err, regcenter.ErrNodeExists) && !errors.Is(err, regcenter.ErrBadVersion) {
		return fmt.Errorf("writing the new namespace's empty load table: %w", err)
	}
	return nil
}
