package placement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
)

// Instance is the payload of an instance's node (layout.Instance): what
// the instance publishes of itself for placement, the operators and its
// peers.
type Instance struct {
	// FaultTolerance is n of the cap N = 1 + K/max(S−n, 1).
	FaultTolerance int `json:"faultTolerance"`
	// AlarmThreshold is M: holding more units raises an alarm; 0 is off.
	AlarmThreshold int `json:"alarmThreshold,omitempty"`
	// Score is the load score, 0 (busy) to 100 (idle); absent until
	// sampled.
	Score *float64 `json:"score,omitempty"`
	// Slots and FreeSlots are the executor slots and those free.
	Slots     int `json:"slots,omitempty"`
	FreeSlots int `json:"freeSlots,omitempty"`
	// Draining and Drained report the instance's drain state: on the
	// drain list, and also holding nothing and running nothing.
	Draining bool `json:"draining,omitempty"`
	Drained  bool `json:"drained,omitempty"`
	// HealthURL is the instance's health endpoint, probed by its peers.
	HealthURL string `json:"healthURL,omitempty"`
	// Holder is the process holding the server id.
	Holder Holder `json:"holder,omitzero"`
	// Starting reports an instance whose Start is registering its jobs:
	// the caps of a job it has not registered yet do not count it (see
	// placeJob), so that the instances already there take the job whole
	// while the others join, rather than leave its items unplaced.
	Starting bool `json:"starting,omitempty"`
}

// Holder names the process holding a server id, as its instance's node
// says: its host, its pid, a token drawn once per process and one drawn
// for its scheduler. Package job tells from it an earlier life of its own
// process from a live process elsewhere.
type Holder struct {
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Process string `json:"process,omitempty"`
	Token   string `json:"token,omitempty"`
}

// View is what placement needs of the namespace besides the table: the
// live instances' nodes and the servers excluded.
type View struct {
	// Instances are the live instances' nodes, by server id.
	Instances map[string]Instance
	excluded  Exclusions
}

// live lists the instances that may take units, sorted.
func (v View) live() []string {
	var out []string
	for s := range v.Instances {
		if !v.excluded.has(s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Exclusions are the servers that may take no units: on the drain list,
// or marked offline.
type Exclusions struct {
	draining, offline map[string]bool
}

func (e Exclusions) has(server string) bool { return e.draining[server] || e.offline[server] }

// ReadExcluded reads the drain list and the offline marks.
func ReadExcluded(ctx context.Context, rc regcenter.Center) (Exclusions, error) {
	e := Exclusions{draining: map[string]bool{}, offline: map[string]bool{}}
	for path, set := range map[string]map[string]bool{layout.DrainList: e.draining, layout.Offline: e.offline} {
		kids, err := rc.Children(ctx, path)
		if errors.Is(err, regcenter.ErrNoNode) {
			continue
		}
		if err != nil {
			return Exclusions{}, fmt.Errorf("reading %s: %w", path, err)
		}
		for _, k := range kids {
			set[k] = true
		}
	}
	return e, nil
}

// Eligible lists the servers of online that may take units, in order.
func (e Exclusions) Eligible(online []string) []string {
	var out []string
	for _, s := range online {
		if !e.has(s) {
			out = append(out, s)
		}
	}
	return out
}

// ReadView reads the live instances and the exclusions. An instance
// whose node is not valid counts, with the default tolerance, and is
// logged to log.
func ReadView(ctx context.Context, rc regcenter.Center, log *slog.Logger) (View, error) {
	excluded, err := ReadExcluded(ctx, rc)
	if err != nil {
		return View{}, err
	}
	v := View{Instances: map[string]Instance{}, excluded: excluded}
	kids, err := rc.Children(ctx, layout.Instances)
	if errors.Is(err, regcenter.ErrNoNode) {
		return v, nil
	}
	if err != nil {
		return View{}, fmt.Errorf("reading %s: %w", layout.Instances, err)
	}
	for _, k := range kids {
		data, _, err := rc.Get(ctx, layout.Instance(k))
		if errors.Is(err, regcenter.ErrNoNode) {
			continue // gone while we looked
		}
		if err != nil {
			return View{}, err
		}
		info, err := DecodeInstance(data)
		if err != nil {
			// Garbage: the server counts, with the default tolerance.
			log.Warn("instance node is not valid; using defaults for it", "server", k, "err", err)
			info = Instance{FaultTolerance: 1}
		}
		v.Instances[k] = info
	}
	return v, nil
}

// DecodeInstance decodes an instance entry (/.placement/instances/{id}).
// Its error wraps stored.ErrBadValue and quotes at most the value's start.
func DecodeInstance(data []byte) (Instance, error) {
	if len(data) > stored.MaxValueBytes {
		return Instance{}, fmt.Errorf("%w: instance entry of %d bytes", stored.ErrBadValue, len(data))
	}
	var info Instance
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		return Instance{}, fmt.Errorf("%w: instance entry: %v", stored.ErrBadValue, err)
	}
	if info.FaultTolerance < 1 || info.AlarmThreshold < 0 || info.Slots < 0 || info.FreeSlots < 0 ||
		(info.Score != nil && (*info.Score < 0 || *info.Score > 100)) {
		return Instance{}, fmt.Errorf("%w: instance entry out of range: %s", stored.ErrBadValue, docsubset.QuoteShort(string(data)))
	}
	return info, nil
}
