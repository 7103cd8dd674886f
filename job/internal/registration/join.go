package registration

import (
	"context"
	"errors"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Jobs that exist already, joined several at a time. Joining a job node
// by node (Join) costs a request per node it reads or writes; an instance
// that starts with thousands of jobs another instance made (a restart, or
// the second instance of a fleet) would send thousands of each. So Start
// reads the nodes of several jobs in one request (regcenter.Center's
// GetMany), decides from what it read each job's writes, and sends those
// of several jobs in one transaction, as CreateTrees does new jobs' trees.
// A job whose nodes ask for more than a transaction can do (another
// session's status to wait for, a node of its tree missing, a config to
// create) is left out, and so is one whose nodes moved between the read
// and the transaction: it has changed nothing, and its start joins it node
// by node (Join), which does all the rest.

// The nodes a job's join reads, in the order of joinPaths.
const (
	readConfig    = iota // the config node: adopted, or written over (Overwrite)
	readServer           // this server's node: absent for a server id new to the job
	readShutdown         // this server's shutdown flag: cleared
	readStatus           // this server's status: made, unless ours or another's
	readSharding         // this server's assignment: a previous life's items
	readEpoch            // leader/sharding: the parent of necessary
	readNecessary        // the reshard flag: set, or proved still set
	readQueue            // the failover queue: needed with failover on
	joinReads
)

// joinPaths are the nodes a job's join reads (see readConfig...).
func (n *Node) joinPaths() []string {
	p, id := n.Paths, n.Server
	return []string{p.Config(), p.Server(id), p.Flag(id, layout.Shutdown), p.Flag(id, layout.Status),
		p.Flag(id, layout.Sharding), p.ShardingEpoch(), p.Necessary(), p.FailoverItems()}
}

// Joined is a job joined in a batch (JoinMany): what its start finishes
// with (Registrar.StartJoined).
type Joined struct {
	// Session is the session the job joined under: its status is this
	// session's.
	Session *regcenter.Session
	// Fresh says that this server id was new to the job (it had no server
	// node): no previous life to recover.
	Fresh bool
	// Previous are the items a previous life of this server id held, as
	// its assignment read (PreviousItems); the transaction proved that it
	// had not moved since.
	Previous []int
}

// joinOps are the writes that join the job, this instance of sess in it,
// as found (the nodes of joinPaths) says the job is, and what its start
// finishes with; ok is false when the job cannot join in a transaction
// and is left to Join. Adopt makes the local config agree with the
// stored one, which is why ops is called before the transaction: a job
// left out adopts it again at Join. Every node read that the writes
// rely on is proved in the transaction: created where it was absent
// (failing if it appeared), deleted or checked at the version read where
// it was there.
func (g *Registrar) joinOps(ctx context.Context, sess *regcenter.Session, found []regcenter.NodeData) (ops []regcenter.Op, j *Joined, ok bool) {
	n := g.Node
	p, id := n.Paths, n.Server
	cfg := found[readConfig]
	if !cfg.Exists {
		return nil, nil, false // Join makes it from this instance's config
	}
	write, err := g.Adopt(ctx, cfg.Data)
	if err != nil {
		return nil, nil, false // Join meets it again, and reports it
	}
	if !found[readEpoch].Exists || (g.Failover() && !found[readQueue].Exists) {
		return nil, nil, false // Join makes the tree's missing part (EnsureTree)
	}
	j = &Joined{Session: sess, Fresh: !found[readServer].Exists}
	if j.Fresh {
		// As JoinFresh: a server node made here has no children.
		ops = append(ops, regcenter.CreateOp{Path: p.Server(id), Data: []byte(Hostname()), Mode: regcenter.Persistent})
	}
	if sd := found[readShutdown]; sd.Exists {
		ops = append(ops, regcenter.DeleteOp{Path: p.Flag(id, layout.Shutdown), Version: -1})
	}
	status := p.Flag(id, layout.Status)
	switch st := found[readStatus]; {
	case !st.Exists:
		ops = append(ops, regcenter.CreateOp{Path: status, Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral})
	case st.Stat.EphemeralOwner == sess.ID():
		// Ours already (same session, new generation): proved still ours.
		ops = append(ops, regcenter.CheckOp{Path: status, Version: st.Stat.Version})
	case st.Stat.EphemeralOwner != 0 && st.Stat.EphemeralOwner == n.StaleOwner():
		// Left by an earlier life of this id that is gone (CreateStatus).
		ops = append(ops, regcenter.DeleteOp{Path: status, Version: st.Stat.Version},
			regcenter.CreateOp{Path: status, Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral})
	default:
		return nil, nil, false // another session's: CreateStatus waits for it to go
	}
	if sh := found[readSharding]; sh.Exists && !j.Fresh {
		if items, err := layout.ParseItems(string(sh.Data)); err == nil {
			j.Previous = items
		}
		ops = append(ops, regcenter.CheckOp{Path: p.Flag(id, layout.Sharding), Version: sh.Stat.Version})
	}
	if write != nil {
		ops = append(ops, regcenter.SetOp{Path: p.Config(), Data: write, Version: -1})
	}
	if found[readNecessary].Exists {
		// A reshard is due with this server's status in place, as the
		// flag Necessary finds there after the status is made.
		ops = append(ops, regcenter.CheckOp{Path: p.Necessary(), Version: -1})
	} else {
		ops = append(ops, p.FlagReshardOps()...)
	}
	return ops, j, true
}

// JoinMany joins this instance to the jobs of gs, which exist already:
// their nodes read in one request (as many as GetMany needs), then the
// writes of several jobs in one transaction (up to TreesPerTxn and
// TreeBytesPerTxn, as CreateTrees), under the session of now. joined[i]
// is the i-th job's, nil when it was left out having changed nothing in
// the registry (see joinOps): its start joins it node by node (Join). An
// error leaves the jobs not yet joined out; what the transactions sent
// before it applied is joined.
func JoinMany(ctx context.Context, rc regcenter.Center, gs []*Registrar) (joined []*Joined, err error) {
	joined = make([]*Joined, len(gs))
	if len(gs) == 0 {
		return joined, nil
	}
	sess := gs[0].Session()
	paths := make([]string, 0, len(gs)*joinReads)
	for _, g := range gs {
		paths = append(paths, g.Node.joinPaths()...)
	}
	found, err := rc.GetMany(ctx, paths...)
	if err != nil {
		return joined, err
	}
	if len(found) != len(paths) {
		return joined, errors.New("registration: a bulk read answered other nodes than asked")
	}
	planned := make([]*Joined, len(gs))
	made, err := commit(ctx, rc, len(gs), func(i int) ([]regcenter.Op, error) {
		ops, j, ok := gs[i].joinOps(ctx, sess, found[i*joinReads:(i+1)*joinReads])
		if !ok {
			return nil, nil
		}
		planned[i] = j
		return ops, nil
	}, func(i int) string { return gs[i].Node.Job }, "joining existing jobs")
	for i, ok := range made {
		if ok {
			joined[i] = planned[i]
		}
	}
	return joined, err
}
