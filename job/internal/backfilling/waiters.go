package backfilling

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Tries is how long a backfill fire waits, within a pass, for items its
// live runs hold here: the release of such an item hands it to the
// waiting backfill fire before the schedule's own make-up run (see
// Waiters.Hand), so that a backfill goes on beside a job whose runs fill
// its period. Items held elsewhere are tried again at the next pass.
const Tries = time.Second

// waiter is a backfill fire waiting for items held here.
type waiter struct {
	want    map[int]bool
	reserve func(items []int) []int // reserves items for the fire, returns those reserved
	got     chan []int              // the items reserved for it; buffered, sent once
}

// Waiters are the backfill fires waiting for items held here (Reserve
// adds and removes them, Hand serves them). Its zero value is ready.
type Waiters struct {
	mu sync.Mutex
	ws map[*waiter]bool
}

// Reserve reserves items for a backfill fire under sess by reserve (the
// book's reservation of the fire), waiting up to Tries — while sess and
// ctx last — for those its live runs hold here when it reserves none at
// once, and returns the items reserved, sorted when some were handed over
// after the first try. reserve is called, with the items wanted among
// those released, by Hand too, under the waiters' lock.
func (ws *Waiters) Reserve(ctx context.Context, sess *regcenter.Session, items []int, reserve func(items []int) []int) []int {
	// Waiting before the first try: a release between the try and the
	// wait hands its items to this fire.
	w := &waiter{want: make(map[int]bool, len(items)), reserve: reserve, got: make(chan []int, 1)}
	for _, it := range items {
		w.want[it] = true
	}
	ws.mu.Lock()
	if ws.ws == nil {
		ws.ws = map[*waiter]bool{}
	}
	ws.ws[w] = true
	ws.mu.Unlock()
	items = reserve(items)
	if len(items) == 0 && sess.Err() == nil {
		t := time.NewTimer(Tries) // real time: the wait is the runs', whatever the clock
		select {
		case items = <-w.got:
		case <-t.C:
		case <-sess.Ctx().Done():
		case <-ctx.Done():
		}
		t.Stop()
	}
	ws.mu.Lock()
	delete(ws.ws, w)
	ws.mu.Unlock()
	// Items handed over before the waiter went are reserved for this
	// fire: they run with it.
	select {
	case got := <-w.got:
		items = append(items, got...)
		slices.Sort(items)
	default:
	}
	return items
}

// Hand hands items just released here to the backfill fires waiting for
// them, reserved for each by its reserve, before anything else may take
// them. A waiter served is removed.
func (ws *Waiters) Hand(items []int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.ws {
		var mine []int
		for _, it := range items {
			if w.want[it] {
				mine = append(mine, it)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if got := w.reserve(mine); len(got) > 0 {
			delete(ws.ws, w)
			w.got <- got
		}
	}
}
