package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// Decoding the config document: DecodeConfig and DecodeConfigTree, the
// document's keys (configFields) with the coders of their values, over
// the tree internal/docsubset reads (package jobfile builds the same
// tree from a job file's YAML).

// configField is one key of the stored config document: its key, the
// sentinel of a bad value (ErrInvalidConfig if none applies), the decoder
// that sets its field and the encoder that writes it.
type configField = configdoc.Field[Config]

// configFields lists the keys of the document, in the order Encode writes
// them; those marked optional are left out when unset, so that a config
// without them reads the same to instances that predate them. Keys are
// case-sensitive.
var configFields = []configField{
	configdoc.Text("name", ErrInvalidName, false, func(c *Config) *string { return &c.Name }),
	configdoc.Text("cron", ErrInvalidCron, false, func(c *Config) *string { return &c.Cron }),
	configdoc.Text("timeZone", ErrInvalidTimeZone, false, func(c *Config) *string { return &c.TimeZone }),
	configdoc.Number("shardingTotalCount", ErrInvalidShardingCount, false, func(c *Config) *int { return &c.ShardingTotalCount }),
	configdoc.Number("itemsPerShard", ErrInvalidShardingCount, true, func(c *Config) *int { return &c.ItemsPerShard }),
	configdoc.Text("shardingItemParameters", ErrInvalidItemParameters, false, func(c *Config) *string { return &c.ShardingItemParameters }),
	configdoc.Text("jobParameter", ErrInvalidConfig, false, func(c *Config) *string { return &c.JobParameter }),
	configdoc.Flag("failover", ErrInvalidConfig, false, func(c *Config) *bool { return &c.Failover }),
	configdoc.Text("misfire", ErrInvalidConfig, false, func(c *Config) *MisfirePolicy { return &c.Misfire }),
	configdoc.Text("overlap", ErrInvalidConfig, true, func(c *Config) *OverlapPolicy { return &c.Overlap }),
	configdoc.Flag("monitorExecution", ErrInvalidConfig, true, func(c *Config) *bool { return &c.Unmonitored }),
	configdoc.Span("recordInterval", ErrInvalidConfig, true, func(c *Config) *time.Duration { return &c.RecordInterval }),
	configdoc.Span("maxTimeDiff", ErrInvalidConfig, false, func(c *Config) *time.Duration { return &c.MaxTimeDiff }),
	configdoc.Span("reconcileInterval", ErrInvalidConfig, false, func(c *Config) *time.Duration { return &c.ReconcileInterval }),
	configdoc.Text("shardingStrategy", ErrInvalidConfig, false, func(c *Config) *string { return &c.ShardingStrategy }),
	configdoc.Span("timeout", ErrInvalidConfig, true, func(c *Config) *time.Duration { return &c.Timeout }),
	configdoc.Moment("start", ErrInvalidConfig, func(c *Config) *time.Time { return &c.Start }),
	configdoc.Moment("end", ErrInvalidConfig, func(c *Config) *time.Time { return &c.End }),
	configdoc.Number("limit", ErrInvalidConfig, true, func(c *Config) *int { return &c.Limit }),
	configdoc.List("exclude", ErrInvalidConfig, func(c *Config) *string { return &c.Exclude }),
	configdoc.Span("jitter", ErrInvalidConfig, true, func(c *Config) *time.Duration { return &c.Jitter }),
	configdoc.Span("startingDeadline", ErrInvalidConfig, true, func(c *Config) *time.Duration { return &c.StartingDeadline }),
	configdoc.Moment("pausedUntil", ErrInvalidConfig, func(c *Config) *time.Time { return &c.PausedUntil }),
	configdoc.Text("pauseNote", ErrInvalidConfig, true, func(c *Config) *string { return &c.PauseNote }),
	configdoc.List("after", ErrInvalidConfig, func(c *Config) *string { return &c.After }),
	configdoc.Text("onParentFailure", ErrInvalidConfig, true, func(c *Config) *ParentPolicy { return &c.OnParentFailure }),
	configdoc.Span("afterTimeout", ErrInvalidConfig, true, func(c *Config) *time.Duration { return &c.AfterTimeout }),
	configdoc.Text("description", ErrInvalidConfig, false, func(c *Config) *string { return &c.Description }),
	configdoc.Flag("disabled", ErrInvalidConfig, false, func(c *Config) *bool { return &c.Disabled }),
	configdoc.Flag("overwrite", ErrInvalidConfig, false, func(c *Config) *bool { return &c.Overwrite }),
	configdoc.RetryField("retry", ErrInvalidConfig, ErrUnknownKey, func(c *Config) *configdoc.Retry { return (*configdoc.Retry)(&c.Retry) }),
	configdoc.AlertField("alert", ErrInvalidConfig, func(c *Config) *configdoc.Alert { return (*configdoc.Alert)(&c.Alert) }),
}

// DecodeConfig parses a document written by Encode (or by hand, or by an
// operator tool) and validates the result. The document is one YAML
// mapping with the keys name, cron, timeZone, shardingTotalCount,
// shardingItemParameters, jobParameter, failover, misfire (once|skip),
// overlap (buffer-one|skip|replace),
// monitorExecution (default true), recordInterval, maxTimeDiff, reconcileInterval,
// timeout, jitter and startingDeadline (Go durations such as "5s"),
// shardingStrategy, the calendar's start, end, pausedUntil (times: see
// Config.Start), limit, exclude and pauseNote, after, onParentFailure and
// afterTimeout, description, disabled, overwrite, retry (a mapping: see
// RetryPolicy) and alert (a mapping with late and notRunFor, durations);
// missing keys take the Config zero value (monitorExecution:
// true).
//
// Decoding is strict: unknown keys (keys are case-sensitive), repeated
// keys, values of the wrong type, malformed YAML and an empty document are
// errors. The document is read as the YAML its writers use: block
// mappings and lists, plain, quoted and literal (|) values, comments,
// and flow collections of scalars on one line ([sat, sun],
// {attempts: 3}); anchors, aliases, merge keys, tags, nested or
// multi-line flow collections and several documents are refused, naming
// the line. Every problem is reported, each wrapping ErrInvalidConfig and,
// where one applies, a specific sentinel such as ErrUnknownKey or
// ErrInvalidCron. On error the Config is the zero value.
//
// A document larger than MaxDocumentBytes or nesting deeper than
// MaxYAMLDepth is refused before any of it is used (ErrConfigTooLarge, ErrConfigTooComplex), as is a
// config whose encoded document would exceed MaxConfigBytes.
func DecodeConfig(data []byte) (Config, error) {
	return DecodeConfigContext(context.Background(), data)
}

// DecodeConfigContext is DecodeConfig, abandoning the work when ctx ends.
func DecodeConfigContext(ctx context.Context, data []byte) (Config, error) {
	root, perr := parseYAMLDocument(ctx, data, MaxDocumentBytes)
	if perr != nil {
		perr.place = "config"
		return Config{}, joinConfigErrors([]error{perr})
	}
	if root == nil {
		return Config{}, joinConfigErrors([]error{&configError{place: "config", subject: "document is empty"}})
	}
	c, errs := decodeConfigNode(root, TreeOptions{})
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return c, nil
}

// TreeOptions say how DecodeConfigTree reads a job's mapping that is
// part of a larger document, such as an entry of a job file's jobs: list.
type TreeOptions struct {
	// Place names the job in errors, given its name ("" when it has
	// none), as a job file does with `jobs[2] "orders-sync"`. nil names
	// it as DecodeConfig does: `job "orders-sync"`.
	Place func(name string) string
	// Keys are keys the mapping may have besides the Config's (a job
	// file's handler, type, ...); the "did you mean" of an unknown key
	// considers them too.
	Keys []string
	// Key decodes one of Keys: it is called with the key's node and its
	// value, in document order. Its error is reported with the job's
	// place, the key and its line. nil: those keys are accepted and
	// ignored.
	Key func(key, value *docsubset.Node) error
}

// DecodeConfigTree decodes and validates one job's mapping n, a node of a
// larger YAML document read into internal/docsubset's tree (package
// jobfile's DecodeConfigNode builds it from a job file), with the decoder
// DecodeConfig uses: the same keys
// and values, as strictly (an unknown key is ErrUnknownKey, naming its
// line and, for a near miss, the key probably meant), and the same
// checks, so that a job file and the stored document cannot disagree.
// Its keys besides the Config's are o's. Every problem is reported, in
// one error whose Unwrap() []error returns them, each wrapping
// ErrInvalidConfig and where one applies a specific sentinel; on error
// the Config is the zero value.
func DecodeConfigTree(n *docsubset.Node, o TreeOptions) (Config, error) {
	c, errs := decodeConfigNode(n, o)
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return c, nil
}

// decodeConfigNode is DecodeConfigTree, returning what it decoded with
// the problems.
func decodeConfigNode(n *docsubset.Node, o TreeOptions) (Config, []error) {
	var c Config
	placeOf := o.Place
	if placeOf == nil {
		placeOf = jobPlace
	}
	w := configdoc.Walk(&c, n, configFields, o.Keys, o.Key, ErrUnknownKey)
	if loc, err := c.location(); err == nil && !w.NotMapping {
		// The calendar's times without an offset are read in the job's
		// time zone, which may come after them in the document.
		w.Times(loc, map[string]*time.Time{"start": &c.Start, "end": &c.End, "pausedUntil": &c.PausedUntil})
	}
	place := placeOf(w.Name)
	errs := make([]error, 0, len(w.Problems))
	for _, p := range w.Problems {
		if p.Doc != nil {
			p.Kind = docKinds[p.Doc.Kind]
		}
		errs = append(errs, &configError{place: place, key: p.Key, kind: p.Kind, subject: p.Subject, line: p.Line,
			detail: p.Detail, hint: p.Hint, cause: p.Cause, suggestion: p.Suggestion})
	}
	if w.NotMapping {
		return c, errs
	}
	for _, e := range c.check(time.Now()) {
		if w.Bad[e.key] {
			continue // already reported as a bad value
		}
		e.place = place
		e.line = w.Lines[e.key]
		errs = append(errs, e)
	}
	return c, errs
}
