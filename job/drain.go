package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardjob/shardjob/internal/jobhook"
	"github.com/shardjob/shardjob/job/internal/instance"
	"github.com/shardjob/shardjob/job/internal/placement"
	"github.com/shardjob/shardjob/regcenter"
)

// The operator's placement verbs: Drain, Undrain and Draining for Go
// programs; for the CLI and the HTTP API, through internal/jobhook,
// job/internal/placement's reads of the namespace and rebalance.

func init() {
	jobhook.ReadNamespace = placement.ReadNamespace
	jobhook.Rebalance = placement.Rebalance
	jobhook.ReleaseUnits = placement.ReleaseUnits
	jobhook.JobUnits = placement.JobUnits
}

// ErrUnknownServer is returned for a server id that is not valid.
var ErrUnknownServer = errors.New("job: unknown server")

func checkServerID(server string) error {
	if !serverIDPattern.MatchString(server) {
		return fmt.Errorf("%w: %q is not a server id (1-128 characters from [A-Za-z0-9._:@-])", ErrUnknownServer, server)
	}
	return nil
}

// Drain puts server on the namespace's drain list: it takes no new units,
// lets its running items finish, and hands its units to the others before
// their next fire (every instance's leader duties notice the list change
// and flag a reshard of the jobs they lead). The instance raises
// EventDrained, and its node says so, once it holds nothing and runs
// nothing. Draining a server already on the list is not an error.
func Drain(ctx context.Context, rc regcenter.Center, server string) error {
	if err := checkServerID(server); err != nil {
		return err
	}
	return instance.PutOnDrainList(ctx, rc, server)
}

// Undrain takes server off the drain list: it takes units again (the
// leaders flag reshards as for Drain). Undraining a server not on the list
// is not an error.
func Undrain(ctx context.Context, rc regcenter.Center, server string) error {
	if err := checkServerID(server); err != nil {
		return err
	}
	return instance.TakeOffDrainList(ctx, rc, server)
}

// Draining lists the servers on the drain list, sorted.
func Draining(ctx context.Context, rc regcenter.Center) ([]string, error) {
	return instance.DrainList(ctx, rc)
}
