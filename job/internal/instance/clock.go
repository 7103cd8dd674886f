package instance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// ClockNode is written once per reconcile round that needs the clock, to
// learn the registry's clock from the write's modification time.
const ClockNode = "/.clock"

// MeasureClock writes ClockNode and compares its modification time with
// the host's clock (Config.HostClock: the real one, whatever clock the
// jobs fire by) at the middle of the round trip. It runs under the
// session, bounded by the timeout; a failure is logged and leaves the
// last measure.
func (n *Node) MeasureClock() {
	rc, host, id := n.cfg.RC, n.cfg.HostClock, []byte(n.cfg.Server)
	sess := rc.Session()
	ctx, cancel := context.WithTimeout(sess.Ctx(), n.cfg.Timeout)
	defer cancel()
	t0 := host()
	st, err := rc.Set(ctx, ClockNode, id, -1)
	if errors.Is(err, regcenter.ErrNoNode) {
		_, err = rc.Create(ctx, ClockNode, id, regcenter.Persistent)
		if err == nil || errors.Is(err, regcenter.ErrNodeExists) {
			t0 = host()
			st, err = rc.Set(ctx, ClockNode, id, -1)
		}
	}
	if err != nil {
		n.cfg.Log.Warn("measuring clock difference with the registry", "err", err)
		return
	}
	t1 := host()
	local := t0.Add(t1.Sub(t0) / 2)
	n.clockOffset.Store(int64(local.Sub(st.Mtime)))
	n.clockMeasured.Store(true)
}

// ClockError returns an error wrapping Config.ClockSkew when the last
// measured difference exceeds max (nil before the first measure, or for
// a max of 0).
func (n *Node) ClockError(max time.Duration) error {
	if max <= 0 || !n.clockMeasured.Load() {
		return nil
	}
	return skew(n.cfg.ClockSkew, time.Duration(n.clockOffset.Load()), max)
}

// skew is ClockError's arithmetic: offset beyond max, allowing the
// registry's millisecond resolution, is an error wrapping sentinel.
func skew(sentinel error, offset, max time.Duration) error {
	off := offset
	if off < 0 {
		off = -off
	}
	// The registry's mtime has millisecond resolution.
	if off > max+time.Millisecond {
		return fmt.Errorf("%w: local clock is %v off (maxTimeDiff %v)", sentinel, offset.Round(time.Millisecond), max)
	}
	return nil
}

// ClockOffset returns the last measured difference of the host's clock
// (Config.HostClock) from the registry's, local minus registry, and
// whether one was measured.
func (n *Node) ClockOffset() (time.Duration, bool) {
	return time.Duration(n.clockOffset.Load()), n.clockMeasured.Load()
}
