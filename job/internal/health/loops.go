package health

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/shardjob/shardjob/regcenter"
)

// Loops are the loops an instance's options turn on — the score loop
// (Scores), the health check loop (Checks), the peer probes (Probes) —
// with what they share.
type Loops struct {
	// RC, Server, Timeout, Failures and Log are each loop's (see Scores,
	// Checks and Probes).
	RC       regcenter.Center
	Server   string
	Timeout  time.Duration
	Failures int
	Log      *slog.Logger

	// The score loop runs when Sample is set: every ScoreEvery, with
	// Slots executor slots, Running items running, publishing by Publish.
	ScoreEvery time.Duration
	Slots      int
	Sample     func() (Sample, error)
	Running    func() int
	Publish    func(ctx context.Context, score float64, free int) error

	// The health check loop runs when Check is set, every CheckEvery;
	// Offline and Online are told of the instance's own marks.
	CheckEvery time.Duration
	Check      func(context.Context) error
	Offline    func(err error)
	Online     func()

	// The peer probes run when ProbeEvery is over 0, with Client;
	// PeerOffline and PeerOnline are told of the peers' marks.
	ProbeEvery  time.Duration
	Client      *http.Client
	PeerOffline func(peer string, err error)
	PeerOnline  func(peer string)
}

// Start starts the loops turned on, each on a goroutine of spawn's (its
// caller's), running until ctx ends.
func (l Loops) Start(ctx context.Context, spawn func(func()) bool) {
	if l.Sample != nil {
		spawn(func() {
			Scores{Every: l.ScoreEvery, Slots: l.Slots, Sample: l.Sample, Running: l.Running, Publish: l.Publish, Timeout: l.Timeout, Log: l.Log}.Run(ctx)
		})
	}
	if l.Check != nil {
		spawn(func() {
			Checks{Every: l.CheckEvery, Check: l.Check, Failures: l.Failures, RC: l.RC, Server: l.Server, Timeout: l.Timeout,
				Offline: l.Offline, Online: l.Online, Log: l.Log}.Run(ctx)
		})
	}
	if l.ProbeEvery > 0 {
		spawn(func() {
			Probes{Every: l.ProbeEvery, Client: l.Client, Self: l.Server, Failures: l.Failures, RC: l.RC, Timeout: l.Timeout,
				PeerOffline: l.PeerOffline, PeerOnline: l.PeerOnline, Log: l.Log}.Run(ctx)
		})
	}
}
