package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/sharding"
)

// JobCodec returns the Codec that decodes a config document exactly as the
// instances do (job.DecodeConfigContext: limits, strict keys, the cron
// spec) and stores the canonical document job.Config.Encode gives. It is
// the one codec of the shardjob command and of package jobhttp.
//
// With lookupStrategy, the job's sharding strategy must also be registered
// in this process (sharding.Lookup), which is true of the instances'
// process: the HTTP handler runs inside the application and can check it.
// The shardjob command passes false: strategies an application registers
// are unknown to it, and an instance refuses an unknown one and keeps its
// config.
func JobCodec(lookupStrategy bool) Codec {
	return func(ctx context.Context, data []byte) (Config, error) {
		cfg, err := job.DecodeConfigContext(ctx, data)
		if err != nil {
			return Config{}, err
		}
		if lookupStrategy {
			if _, err := sharding.Lookup(cfg.WithDefaults().ShardingStrategy); err != nil {
				return Config{}, fmt.Errorf("%w: job %q: %w", job.ErrInvalidConfig, cfg.Name, err)
			}
		}
		doc, err := cfg.Encode()
		if err != nil {
			return Config{}, err
		}
		out := Config{
			Name: cfg.Name, Cron: cfg.Cron, TimeZone: cfg.TimeZone, ShardingTotalCount: cfg.ShardingTotalCount,
			Failover: cfg.Failover, Unmonitored: cfg.Unmonitored, Disabled: cfg.Disabled, Description: cfg.Description, Document: doc,
			PausedUntil: cfg.PausedUntil, PauseNote: cfg.PauseNote, After: splitList(cfg.After),
		}
		if _, _, err := cfg.Schedule(); err == nil {
			out.NextFire = cfg.NextFireAfter
			out.Next = func(t time.Time) time.Time {
				n, _ := cfg.NextFireAfter(t)
				return n
			}
		}
		return out, nil
	}
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// WriteJSON writes v to w as the shardjob command's "-o json" output and
// the HTTP handler's bodies are written: indented by two spaces, with '<',
// '>' and '&' left as they are, and a trailing newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
