package listener_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zookeeper"
)

type nopHooks struct{}

func (nopHooks) BeforeFire(context.Context, listener.Fire) error { return nil }
func (nopHooks) AfterFire(context.Context, listener.Fire) error  { return nil }

// The guarantee's ZooKeeper behaviour is tested with three instances in
// package job (TestDistributeOnce...); here, its argument checks.
func TestNewGuaranteeRefusesBadArguments(t *testing.T) {
	// The checks come before any use of the center: a typed nil stands
	// for one.
	var zk *zookeeper.Center
	for _, c := range []struct {
		name    string
		rc      regcenter.Center
		job     string
		hooks   listener.DistributeOnce
		timeout time.Duration
	}{
		{"no center", nil, "j", nopHooks{}, 0},
		{"no hooks", zk, "j", nil, 0},
		{"no job", zk, "", nopHooks{}, 0},
		{"job with a slash", zk, "a/b", nopHooks{}, 0},
		{"negative timeout", zk, "j", nopHooks{}, -time.Second},
	} {
		if _, err := listener.NewGuarantee(c.rc, c.job, c.hooks, c.timeout, nil); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

func TestFireFuncsAllowNil(t *testing.T) {
	var got []string
	l := listener.FireFuncs{Ended: func(f listener.Fire) { got = append(got, f.TaskID) }}
	l.FireStarted(listener.Fire{TaskID: "a"})
	l.FireEnded(listener.Fire{TaskID: "b"})
	if len(got) != 1 || got[0] != "b" {
		t.Fatalf("got %v", got)
	}
}
