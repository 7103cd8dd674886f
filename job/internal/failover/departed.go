package failover

import (
	"context"

	"github.com/shardjob/shardjob/failover"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Departed is the assignment of a server that left, as the leader read it
// to queue its items for failover.
type Departed struct {
	// Path is the server's sharding node.
	Path string
	// Items are the items it names; nil when it names none, or when it
	// does not parse (then Garbage says why).
	Items []int
	// Version is the node's version as read: QueueDeparted clears the
	// node at it.
	Version int32
	// Garbage is the error parsing the node, nil when it parsed.
	Garbage error
}

// ReadDeparted reads the assignment of server, a server of the job at
// paths that left: one round trip. The error is the read's (wrapping
// regcenter.ErrNoNode when the server has no sharding node).
func ReadDeparted(ctx context.Context, rc regcenter.Center, paths layout.Job, server string) (Departed, error) {
	d := Departed{Path: paths.Flag(server, layout.Sharding)}
	data, st, err := rc.Get(ctx, d.Path)
	if err != nil {
		return d, err
	}
	d.Version = st.Version
	d.Items, d.Garbage = layout.ParseItems(string(data))
	if d.Garbage != nil {
		d.Items = nil
	}
	return d, nil
}

// QueueDeparted queues entries, the departed server's items to redo, in
// job's failover queue and, in the same transaction fenced on fence,
// clears the server's assignment at the version read: one departure is
// queued once, and a second, concurrent queueing of it fails with
// regcenter.ErrBadVersion. With no entries it only clears the assignment.
func QueueDeparted(ctx context.Context, rc regcenter.Center, job string, d Departed, entries []failover.Entry, fence regcenter.Op) error {
	clear := regcenter.SetOp{Path: d.Path, Data: nil, Version: d.Version}
	return failover.NewQueue(rc, job).Enqueue(ctx, entries, fence, clear)
}
