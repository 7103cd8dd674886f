package confignode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// Node is a job's config node as this instance reads and writes it; C is
// the decoded document. Its fields are set at construction.
type Node[C any] struct {
	RC   regcenter.Center
	Path string // the config node (layout.Job's Config)
	Job  string // the job's name, in errors
	Log  *slog.Logger
	// Bad remembers the versions reported as not decoding, with the
	// job's other stored values.
	Bad *stored.BadValues
	// Encode encodes this instance's config as it is now.
	Encode func() ([]byte, error)
	// Decode decodes and checks a stored document.
	Decode func(ctx context.Context, data []byte) (C, error)
}

// Load makes the node and the local config agree. With overwrite it
// writes the local config; otherwise it makes the node from the local
// config when there is none, and returns a stored config that decodes
// with use true: it is the job's config from now on. A stored config that
// does not decode is logged, and the local config stays.
func (n *Node[C]) Load(ctx context.Context, overwrite bool) (cfg C, use bool, err error) {
	data, err := n.Encode()
	if err != nil {
		return cfg, false, err
	}
	if overwrite {
		_, err := n.RC.Set(ctx, n.Path, data, -1)
		if errors.Is(err, regcenter.ErrNoNode) {
			_, err = n.RC.Create(ctx, n.Path, data, regcenter.Persistent)
			if errors.Is(err, regcenter.ErrNodeExists) {
				_, err = n.RC.Set(ctx, n.Path, data, -1)
			}
		}
		if err != nil {
			return cfg, false, fmt.Errorf("job %q: write config: %w", n.Job, err)
		}
		return cfg, false, nil
	}
	got, _, err := n.RC.Get(ctx, n.Path)
	if errors.Is(err, regcenter.ErrNoNode) {
		_, err = n.RC.Create(ctx, n.Path, data, regcenter.Persistent)
		if err == nil {
			return cfg, false, nil
		}
		if !errors.Is(err, regcenter.ErrNodeExists) {
			return cfg, false, fmt.Errorf("job %q: write config: %w", n.Job, err)
		}
		got, _, err = n.RC.Get(ctx, n.Path)
	}
	if err != nil {
		return cfg, false, fmt.Errorf("job %q: read config: %w", n.Job, err)
	}
	cfg, use = n.decodeStored(ctx, got)
	return cfg, use, nil
}

// Adopt is Load with the node's document already read (stored): with
// overwrite it returns the local config encoded, for the caller to write
// over the node; otherwise it returns the stored config with use true
// when it decodes (logged when it does not: the local config stays), and
// nothing to write.
func (n *Node[C]) Adopt(ctx context.Context, overwrite bool, stored []byte) (cfg C, use bool, write []byte, err error) {
	if overwrite {
		data, err := n.Encode()
		return cfg, false, data, err
	}
	cfg, use = n.decodeStored(ctx, stored)
	return cfg, use, nil, nil
}

// decodeStored decodes the stored document for Load and Adopt: use is
// false, and it is logged, when it does not decode.
func (n *Node[C]) decodeStored(ctx context.Context, data []byte) (cfg C, use bool) {
	cfg, err := n.Decode(ctx, data)
	if err != nil {
		n.Log.Error("stored config is invalid; using this instance's config", "err", err)
		return cfg, false
	}
	return cfg, true
}

// Restore writes this instance's config to the node when the node is
// gone at re-registration: ZooKeeper lost its data (a wiped ensemble
// comes back empty), and the cluster's truth is what its instances still
// hold. A job removed on purpose never gets here: its instances saw the
// node's deletion and stopped. A job not registered here yet (registered
// reports false: a session lost while Start was registering thousands of
// jobs, before anyone made this one's tree) has nothing to restore: the
// node is made as its registration would make it, and nothing is
// reported.
func (n *Node[C]) Restore(ctx context.Context, registered func() bool) error {
	ok, _, err := n.RC.Exists(ctx, n.Path)
	if err != nil || ok {
		return err
	}
	data, err := n.Encode()
	if err != nil {
		return err
	}
	_, err = n.RC.Create(ctx, n.Path, data, regcenter.Persistent)
	if errors.Is(err, regcenter.ErrNodeExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %q: restore config node: %w", n.Job, err)
	}
	if !registered() {
		n.Log.Debug("config node written at registration, under a new session")
		return nil
	}
	n.Log.Warn("config node was missing at re-registration (the registry lost its data?); restored it from this instance's config")
	return nil
}

// Watch watches the node: changed is called for a write or a creation,
// deleted for a deletion, both on the registry's event goroutine. It
// returns the watch's cancel, also when the watch could not be armed now
// (it is armed later by the dispatcher; what changes meanwhile is
// reported then).
func (n *Node[C]) Watch(ctx context.Context, changed, deleted func()) (cancel func()) {
	_, cancel, err := n.RC.WatchNow(ctx, n.Path, regcenter.WatchNode, func(ev regcenter.Event) {
		switch ev.Type {
		case regcenter.EventDataChanged, regcenter.EventCreated:
			changed()
		case regcenter.EventDeleted:
			deleted()
		}
	})
	if err != nil {
		n.Log.Debug("config watch deferred", "err", err)
	}
	return cancel
}

// Read reads the changed node and decodes it; ok is false when it cannot
// be read, is absent, or does not decode. A version that does not decode
// is reported once: rejected is its error the first time, for the
// caller's event, and nil after that. The node is left as it is: what an
// operator wrote by hand is theirs to correct.
func (n *Node[C]) Read(ctx context.Context) (cfg C, ok bool, rejected error) {
	data, st, err := n.RC.Get(ctx, n.Path)
	if err != nil {
		if !errors.Is(err, regcenter.ErrNoNode) {
			n.Log.Warn("reading changed config", "err", err)
		}
		return cfg, false, nil
	}
	cfg, err = n.Decode(ctx, data)
	if err != nil {
		if n.Bad.First(n.Path, st.Mzxid) {
			n.Log.Error("config node rejected; last good config stays in force", "err", err, "version", st.Version)
			return cfg, false, err
		}
		return cfg, false, nil
	}
	n.Bad.Good(n.Path)
	return cfg, true, nil
}

// Found is what Gone read back.
type Found int

// What Gone read back.
const (
	Ended   Found = iota // the registry closed, or ctx ended, first
	Absent               // the node is gone: the job was removed
	Present              // the node is there: read it as a change
)

// Gone reads the node back after a watch reported it deleted: a watch
// also reports a deletion for a node written over itself in one
// transaction (a deletion and a creation, as ZooKeeper's watches see such
// a multi). A read that fails is tried again, after a wait that doubles
// up to maxWait's, until it answers or ctx ends; coord bounds each read.
func (n *Node[C]) Gone(ctx context.Context, coord func() (context.Context, context.CancelFunc), maxWait func() time.Duration) Found {
	wait := 100 * time.Millisecond
	for {
		cctx, cancel := coord()
		ok, _, err := n.RC.Exists(cctx, n.Path)
		cancel()
		switch {
		case err == nil && !ok:
			return Absent
		case err == nil:
			n.Log.Info("config node reported deleted is there: reading it as a change")
			return Present
		case errors.Is(err, regcenter.ErrClosed):
			return Ended
		}
		n.Log.Warn("config node reported deleted; reading it back", "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Ended
		case <-t.C:
		}
		wait = min(2*wait, maxWait())
	}
}
