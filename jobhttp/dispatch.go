package jobhttp

import (
	"errors"
	"net/http"

	"github.com/shardjob/shardjob/dispatch"
	"github.com/shardjob/shardjob/internal/admin"
)

// DispatchState is the answer of GET /dispatch/workers: the dispatcher's
// global cap and every worker's queue.
type DispatchState struct {
	// Node is the serving node's current lease id; "" when the dispatcher
	// only reads the store (it was not started to run tasks).
	Node   string        `json:"node"`
	Global DispatchCap   `json:"global"`
	Queues []WorkerQueue `json:"workers"`
	// Stats are the serving node's counters since it opened the store;
	// absent when Node is "".
	Stats *DispatchStats `json:"stats,omitempty"`
}

// DispatchCap is a cap and the tasks running against it.
type DispatchCap struct {
	MaxRunning int `json:"maxRunning"`
	Running    int `json:"running"`
}

// WorkerQueue is one worker's queue (dispatch.Queue).
type WorkerQueue struct {
	Worker     string `json:"worker"`
	MaxRunning int    `json:"maxRunning"`
	Running    int    `json:"running"`
	// Due counts the waiting tasks whose start time has come.
	Due int `json:"due"`
	// Late counts the tasks whose last start came after their acceptable
	// start.
	Late int `json:"late"`
	// Tasks counts the tasks by status: waiting, running, finished, failed,
	// cancelled.
	Tasks map[dispatch.Status]int `json:"tasks"`
}

// DispatchStats are dispatch.Stats.
type DispatchStats struct {
	Started    int64 `json:"started"`
	Late       int64 `json:"late"`
	LateFailed int64 `json:"lateFailed"`
	Finished   int64 `json:"finished"`
	TimedOut   int64 `json:"timedOut"`
	Retried    int64 `json:"retried"`
	Failed     int64 `json:"failed"`
	Reaped     int64 `json:"reaped"`
	Stale      int64 `json:"stale"`
	LeaseLost  int64 `json:"leaseLost"`
}

func (h *handler) dispatchWorkers(w http.ResponseWriter, r *http.Request) {
	d := h.dispatcher
	if d == nil {
		h.reply(w, http.StatusNotFound, httpError{Error: "the dispatcher is not configured (jobhttp.Options.Dispatcher; shardjob console --dispatch-driver)"})
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	g, err := d.Global(ctx)
	if err != nil {
		h.dispatchFail(w, r, err)
		return
	}
	qs, err := d.Queues(ctx)
	if err != nil {
		h.dispatchFail(w, r, err)
		return
	}
	out := DispatchState{
		Node:   d.Node(),
		Global: DispatchCap{MaxRunning: g.MaxRunning, Running: g.Running},
		Queues: make([]WorkerQueue, 0, len(qs)),
	}
	if out.Node != "" {
		st := d.Stats()
		out.Stats = &DispatchStats{Started: st.Started, Late: st.Late, LateFailed: st.LateFailed, Finished: st.Finished,
			TimedOut: st.TimedOut, Retried: st.Retried, Failed: st.Failed, Reaped: st.Reaped, Stale: st.Stale, LeaseLost: st.LeaseLost}
	}
	for _, q := range qs {
		out.Queues = append(out.Queues, WorkerQueue{Worker: q.Worker, MaxRunning: q.MaxRunning, Running: q.Running,
			Due: q.Due, Late: q.Late, Tasks: q.Tasks})
	}
	h.reply(w, http.StatusOK, out)
}

// dispatchFail answers a dispatcher error: 503 when it is closed, else as
// any other failure.
func (h *handler) dispatchFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, dispatch.ErrClosed) {
		h.reply(w, http.StatusServiceUnavailable, httpError{Error: admin.OneLine(err)})
		return
	}
	h.fail(w, r, err)
}
