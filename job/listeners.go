package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/shardjob/shardjob/listener"
	"github.com/shardjob/shardjob/regcenter"
)

// WithFireListener adds a listener told when a fire starts and ends on this
// instance (see listener.FireListener): once around all the items a fire,
// a make-up run or a trigger runs here.
func WithFireListener(l listener.FireListener) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("%w: nil fire listener", ErrInvalidOption)
		}
		o.fireListeners = append(o.fireListeners, l)
		return nil
	}
}

// DistributeOnce returns j with hooks that run once per fire across the
// cluster: BeforeFire before any instance executes an item of the fire,
// AfterFire once every item of the fire has completed on every instance
// (listener.Guarantee says how). Every instance must add the job wrapped
// the same way; rc is this instance's registry center and name the job's
// name. Each wait, and each hook, is bounded by timeout (0:
// listener.DefaultDistributeTimeout) and ends with an error wrapping
// listener.ErrDistributeTimeout when it expires — an item whose before
// wait expired does not run, and its execution fails with that error.
func DistributeOnce(rc regcenter.Center, name string, j Job, hooks listener.DistributeOnce, timeout time.Duration, log *slog.Logger) (Job, error) {
	g, err := listener.NewGuarantee(rc, name, hooks, timeout, log)
	if err != nil {
		return nil, err
	}
	return &distributeOnce{job: j, g: g}, nil
}

type distributeOnce struct {
	job Job
	g   *listener.Guarantee
}

func (d *distributeOnce) Execute(ctx context.Context, sc ShardingContext) error {
	it := listener.Item{Item: sc.Item, Total: sc.ShardingTotalCount,
		Fire: listener.Fire{Job: sc.JobName, TaskID: sc.TaskID, FireTime: sc.FireTime, Kind: string(sc.Kind), ServerID: sc.ServerID}}
	return d.g.Run(ctx, it, func(ctx context.Context) error { return d.job.Execute(ctx, sc) })
}
