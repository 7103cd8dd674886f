package registration

import (
	"context"
	"errors"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/fireplan"
	"github.com/shardjob/shardjob/regcenter"
)

// PreviousItems reads the items a previous run of this server id held
// when it died (its sharding flag): none when the flag is gone or does
// not parse (garbage is replaced at the next reshard).
func (n *Node) PreviousItems(ctx context.Context) ([]int, error) {
	data, _, err := n.RC.Get(ctx, n.Paths.Flag(n.Server, layout.Sharding))
	if errors.Is(err, regcenter.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	items, err := layout.ParseItems(string(data))
	if err != nil {
		return nil, nil
	}
	return items, nil
}

// Debt is an item's debt left by a previous life: its runs owed from
// Since through Latest, the schedule's latest fire. A run that makes up for
// only the start of it does not settle the rest: both ends are noted.
type Debt struct {
	Item          int
	Since, Latest time.Time
}

// Owed returns the debts of the previous life's items (PreviousItems)
// below total: each whose completed fire (completed) is before latest,
// the schedule's latest fire, is owed from the fire after it (or latest
// itself, when it never completed or the next fire is latest). On an
// error from completed it returns the debts found before it.
func Owed(ctx context.Context, items []int, total int, sched fireplan.Schedule, latest time.Time, completed func(context.Context, int) (time.Time, error)) ([]Debt, error) {
	var debts []Debt
	for _, it := range items {
		if it >= total {
			continue
		}
		done, err := completed(ctx, it)
		if err != nil {
			return debts, err
		}
		if done.IsZero() || done.Before(latest) {
			since := latest
			if !done.IsZero() {
				if n := sched.Next(done); !n.IsZero() && n.Before(latest) {
					since = n
				}
			}
			debts = append(debts, Debt{Item: it, Since: since, Latest: latest})
		}
	}
	return debts, nil
}
