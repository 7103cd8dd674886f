package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/regcenter"
)

// Node writes one job's registration on this instance, node by node: this
// server's node and status, the job's tree that registration needs, the
// shutdown flag cleared; and reads what a previous life of this server id
// left. Its fields are set at construction and not changed.
type Node struct {
	RC     regcenter.Center
	Paths  layout.Job
	Job    string // the job's name, in errors
	Server string // this instance's server id
	// SessionTimeout is the registry's session timeout: how long
	// CreateStatus waits for another session's status to go.
	SessionTimeout func() time.Duration
	// StaleOwner is the session of a dead earlier process that held this
	// server id (0: none known): its status is deleted at once.
	StaleOwner func() int64
	// InUse is the sentinel CreateStatus's error wraps when another live
	// instance holds this server id's status.
	InUse error
	Log   *slog.Logger
}

// JoinFresh registers this server in an existing job it has never been
// part of, in one transaction: its server node and its status. It reports
// false, having changed nothing, when the server node exists (this server
// id ran the job before: registration then goes node by node, clears its
// shutdown flag, finds its status and recovers what its previous life
// held). A server node made here has no children: no flag, no assignment,
// no status of another instance to wait for.
func (n *Node) JoinFresh(ctx context.Context) (bool, error) {
	host, _ := os.Hostname()
	err := n.RC.Multi(ctx,
		regcenter.CreateOp{Path: n.Paths.Server(n.Server), Data: []byte(host), Mode: regcenter.Persistent},
		regcenter.CreateOp{Path: n.Paths.Flag(n.Server, layout.Status), Data: []byte(layout.StatusReady), Mode: regcenter.Ephemeral})
	switch _, out := leftOut(err); {
	case err == nil:
		return true, nil
	case out:
		return false, nil // this server's node exists, or the job's servers node does not: node by node
	default:
		return false, fmt.Errorf("job %q: register server: %w", n.Job, err)
	}
}

// ClearShutdown deletes this server's shutdown flag. A shutdown flag is
// honoured by the running instance and cleared by the next start (as in
// ElasticJob); paused and disabled persist.
func (n *Node) ClearShutdown(ctx context.Context) error {
	if err := n.RC.Delete(ctx, n.Paths.Flag(n.Server, layout.Shutdown), -1); err != nil && !errors.Is(err, regcenter.ErrNoNode) {
		return fmt.Errorf("job %q: clear shutdown flag: %w", n.Job, err)
	}
	return nil
}

// CreateServer creates this server's node if it does not exist.
func (n *Node) CreateServer(ctx context.Context) error {
	host, _ := os.Hostname()
	if _, err := n.RC.Create(ctx, n.Paths.Server(n.Server), []byte(host), regcenter.Persistent); err != nil && !errors.Is(err, regcenter.ErrNodeExists) {
		return fmt.Errorf("job %q: register server: %w", n.Job, err)
	}
	return nil
}

// EnsureTree makes the leader's part of the job's tree that registration
// needs: leader/sharding (the parent of necessary) and, for a job with
// failover on, the failover queue. One read each when they exist. The
// election latch's parent is made by the first candidate.
func (n *Node) EnsureTree(ctx context.Context, failover bool) error {
	if err := n.RC.EnsurePath(ctx, n.Paths.ShardingEpoch()); err != nil {
		return err
	}
	if failover {
		return n.RC.EnsurePath(ctx, n.Paths.FailoverItems())
	}
	return nil
}

// CreateStatus creates this server's ephemeral status node under sess. If
// another session holds it, that is either this id's own previous life (a
// crash less than a session timeout ago), removed at once when StaleOwner
// proved that life over, or another live instance with the same server id,
// which the instance node normally refuses first: wait up to a session
// timeout for it to go, then give up with an error wrapping InUse.
func (n *Node) CreateStatus(ctx context.Context, sess *regcenter.Session) error {
	p := n.Paths.Flag(n.Server, layout.Status)
	gone := make(chan struct{}, 1)
	var cancelWatch func()
	defer func() {
		if cancelWatch != nil {
			cancelWatch()
		}
	}()
	deadline := time.NewTimer(n.SessionTimeout() + time.Second)
	defer deadline.Stop()
	for {
		_, err := n.RC.Create(ctx, p, []byte(layout.StatusReady), regcenter.Ephemeral)
		if err == nil {
			return nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return fmt.Errorf("job %q: register status: %w", n.Job, err)
		}
		ok, st, err := n.RC.Exists(ctx, p)
		if err != nil {
			return fmt.Errorf("job %q: register status: %w", n.Job, err)
		}
		if ok && st.EphemeralOwner == sess.ID() {
			return nil // ours already (same session, new generation)
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner != 0 && st.EphemeralOwner == n.StaleOwner() {
			// Left by an earlier life of this id that is gone (the
			// instance node proved it): no need to wait for its session
			// to expire.
			if err := n.RC.Delete(ctx, p, st.Version); err != nil && !errors.Is(err, regcenter.ErrNoNode) && !errors.Is(err, regcenter.ErrBadVersion) {
				return fmt.Errorf("job %q: register status: %w", n.Job, err)
			}
			continue
		}
		if cancelWatch == nil {
			cancelWatch = n.RC.Watch(p, regcenter.WatchNode, func(ev regcenter.Event) {
				select {
				case gone <- struct{}{}:
				default:
				}
			})
		}
		select {
		case <-gone:
		case <-deadline.C:
			return fmt.Errorf("%w: job %q, server %q (session 0x%x holds %s); give each instance its own server id", n.InUse, n.Job, n.Server, st.EphemeralOwner, p)
		case <-ctx.Done():
			return fmt.Errorf("job %q: waiting for stale status %s: %w", n.Job, p, ctx.Err())
		}
	}
}

// Reregister runs after a new session, on the caller's goroutine:
// everything ephemeral is gone, so attempt (the config restored, the job
// registered again) is tried, each time within a session timeout and two
// seconds, with a backoff from 100ms to 5s between attempts, until it
// succeeds or sess ends. It reports whether an attempt succeeded.
func (n *Node) Reregister(sess *regcenter.Session, attempt func(ctx context.Context) error) bool {
	backoff := 100 * time.Millisecond
	for sess.Err() == nil {
		ctx, cancel := context.WithTimeout(sess.Ctx(), n.SessionTimeout()+2*time.Second)
		err := attempt(ctx)
		cancel()
		if err == nil {
			return true
		}
		n.Log.Warn("re-registration failed; retrying", "err", err, "in", backoff)
		select {
		case <-sess.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return false
}
