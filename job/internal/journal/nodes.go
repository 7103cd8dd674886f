package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// Read returns what journal id, another process's, says of job's item:
// the runs of fires its entry covers, as stored.Completed.Ran stores
// them. Nil when the journal or the entry is not there, or the journal
// does not decode: a journal is only ever an addition to a record.
func Read(ctx context.Context, rc regcenter.Center, id, job string, item int) ([][2]int64, error) {
	data, _, err := rc.Get(ctx, layout.Journal(id))
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	doc, err := stored.DecodeJournal(data)
	if err != nil {
		return nil, nil
	}
	return doc.Entry(job, item), nil
}

// List lists the journals in the registry by id, this process's too; none
// when there are none.
func List(ctx context.Context, rc regcenter.Center) ([]string, error) {
	ids, err := rc.Children(ctx, layout.Journals)
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	return ids, err
}

// Orphan is a journal left unwritten for the orphan age: that of a
// process that is gone, to fold into the records that name it.
type Orphan struct {
	// ID is the journal's name.
	ID string
	// Doc is what it says; empty when it does not decode, which a fold
	// adds nothing from.
	Doc stored.Journal
	// Version is the node's version as read: DeleteOrphan deletes it only
	// if no write came since.
	Version int32
}

// ReadOrphan reads journal id, and returns it (ok) when it has not been
// written for age; not when it is gone or was written since.
func ReadOrphan(ctx context.Context, rc regcenter.Center, id string, age time.Duration) (o Orphan, ok bool, err error) {
	data, st, err := rc.Get(ctx, layout.Journal(id))
	if errors.Is(err, regcenter.ErrNoNode) {
		return Orphan{}, false, nil
	}
	if err != nil {
		return Orphan{}, false, err
	}
	if time.Since(st.Mtime) < age {
		return Orphan{}, false, nil
	}
	o = Orphan{ID: id, Version: st.Version}
	if doc, derr := stored.DecodeJournal(data); derr == nil {
		o.Doc = doc
	}
	return o, true, nil
}

// DeleteOrphan deletes o's node, once its entries are folded, if nothing
// wrote it since it was read: nil when it is gone, or written again (its
// process lives).
func DeleteOrphan(ctx context.Context, rc regcenter.Center, o Orphan) error {
	err := rc.Delete(ctx, layout.Journal(o.ID), o.Version)
	if errors.Is(err, regcenter.ErrNoNode) || errors.Is(err, regcenter.ErrBadVersion) {
		return nil // gone, or written again: its process lives
	}
	return err
}

// Fold adds ran, journal id's entry for item, to the item's record at
// path when the record still names that journal, and has the record name
// none: it reads the node and writes over the version read, again when it
// changed in between, at most eight times. A record that is not there,
// does not decode or names another journal is left as it is.
func Fold(ctx context.Context, rc regcenter.Center, sched fireplan.Schedule, path, id string, item int, ran [][2]int64) error {
	for attempt := 0; attempt < 8; attempt++ {
		data, st, err := rc.Get(ctx, path)
		if errors.Is(err, regcenter.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := stored.DecodeCompleted(data)
		if err != nil || m.Journal != id {
			return nil // rewritten since by the item's next owner, or garbage
		}
		c := m.Cover().Union(sched, stored.RanCover(ran))
		m.Fire, m.Ran, m.Floor, m.Journal = c.Through().UnixMilli(), c.Ran(), 0, ""
		_, err = rc.Set(ctx, path, m.Marshal(), st.Version)
		if !errors.Is(err, regcenter.ErrBadVersion) {
			return err
		}
	}
	return fmt.Errorf("folding into the record of item %d: it kept changing", item)
}
