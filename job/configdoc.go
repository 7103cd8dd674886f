package job

import (
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// The config document stored in a job's config node: Encode and the YAML
// it writes (marshalDoc, through internal/docsubset's writer), the part
// after the name line encoded once for jobs that differ only in their
// names.

// Encode returns the YAML document stored in the job's config
// node. Every key is written, zero values included (but for a timeout of
// 0, left out so that instances that predate the key read the document),
// so the document is complete for other readers; defaults are not filled
// in, so DecodeConfig gives back exactly c. The keys are those of DecodeConfig, with
// Unmonitored written as monitorExecution: !Unmonitored and durations as Go
// duration strings ("5s"). An invalid c is refused with Validate's error.
func (c Config) Encode() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.marshal()
}

// marshal writes the document Encode returns, without validating c.
// Registering thousands of jobs that differ only in their names encodes
// the rest of the document once (docTails): the encoder is most of the
// client's CPU for registering a new job.
func (c Config) marshal() ([]byte, error) {
	if !configNameRE.MatchString(c.Name) || len(c.Name) > MaxNameLength {
		return c.marshalDoc(), nil
	}
	key := c
	key.Name = ""
	return docTails.Document(c.Name, key, func(name string) []byte {
		d := key
		d.Name = name
		return d.marshalDoc()
	}), nil
}

// docTails are the documents' parts after the name line, for the latest
// config encoded.
var docTails configdoc.Tails[Config]

// marshalDoc encodes the whole document: every key in configFields'
// order, those marked so left out when unset.
func (c Config) marshalDoc() []byte {
	var w docsubset.Writer
	w.String("name", c.Name)
	w.String("cron", c.Cron)
	w.String("timeZone", c.TimeZone)
	w.Int("shardingTotalCount", c.ShardingTotalCount)
	if c.ItemsPerShard != 0 {
		w.Int("itemsPerShard", c.ItemsPerShard)
	}
	w.String("shardingItemParameters", c.ShardingItemParameters)
	w.String("jobParameter", c.JobParameter)
	w.Bool("failover", c.Failover)
	w.String("misfire", string(c.Misfire))
	w.StringIfSet("overlap", string(c.Overlap))
	w.Bool("monitorExecution", !c.Unmonitored)
	w.StringIfSet("recordInterval", timeoutText(c.RecordInterval))
	w.String("maxTimeDiff", c.MaxTimeDiff.String())
	w.String("reconcileInterval", c.ReconcileInterval.String())
	w.String("shardingStrategy", c.ShardingStrategy)
	// The keys below are left out when unset, so that a config without
	// them reads the same to instances that predate them.
	w.StringIfSet("timeout", timeoutText(c.Timeout))
	w.StringIfSet("start", configTimeText(c.Start))
	w.StringIfSet("end", configTimeText(c.End))
	if c.Limit != 0 {
		w.Int("limit", c.Limit)
	}
	w.StringIfSet("exclude", c.Exclude)
	w.StringIfSet("jitter", timeoutText(c.Jitter))
	w.StringIfSet("startingDeadline", timeoutText(c.StartingDeadline))
	w.StringIfSet("pausedUntil", configTimeText(c.PausedUntil))
	w.StringIfSet("pauseNote", c.PauseNote)
	w.StringIfSet("after", c.After)
	w.StringIfSet("onParentFailure", string(c.OnParentFailure))
	w.StringIfSet("afterTimeout", timeoutText(c.AfterTimeout))
	w.String("description", c.Description)
	w.Bool("disabled", c.Disabled)
	w.Bool("overwrite", c.Overwrite)
	if p := c.Retry; p != (RetryPolicy{}) {
		w.Map("retry")
		w.Int("attempts", p.Attempts)
		w.StringIfSet("backoff", timeoutText(p.Backoff))
		w.StringIfSet("maxBackoff", timeoutText(p.MaxBackoff))
		if p.Jitter != 0 {
			w.Float("jitter", p.Jitter)
		}
		w.End()
	}
	if p := c.Alert; !p.IsZero() {
		w.Map("alert")
		w.StringIfSet("late", timeoutText(p.Late))
		w.StringIfSet("notRunFor", timeoutText(p.NotRunFor))
		w.End()
	}
	return w.Bytes()
}

func timeoutText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
