package job

import (
	"context"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// Decoding the config document: DecodeConfig and DecodeConfigTree, the
// document's keys (configFields) and the decoders of their values, over
// the tree internal/docsubset reads (package jobfile builds the same
// tree from a job file's YAML).

// configField is one key of the stored config document: its key, the
// sentinel of a bad value (ErrInvalidConfig if none applies) and the
// decoder that sets its field.
type configField = configdoc.Field[Config]

// field is a configField.
func field(key string, kind error, decode func(c *Config, n *docsubset.Node) error) configField {
	return configField{Key: key, Kind: kind, Decode: decode}
}

// configFields lists the keys of the document, in the order Encode writes
// them. Keys are case-sensitive.
var configFields = []configField{
	field("name", ErrInvalidName, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.Name) }),
	field("cron", ErrInvalidCron, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.Cron) }),
	field("timeZone", ErrInvalidTimeZone, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.TimeZone) }),
	field("shardingTotalCount", ErrInvalidShardingCount, func(c *Config, n *docsubset.Node) error { return configdoc.Int(n, &c.ShardingTotalCount) }),
	field("itemsPerShard", ErrInvalidShardingCount, func(c *Config, n *docsubset.Node) error { return configdoc.Int(n, &c.ItemsPerShard) }),
	field("shardingItemParameters", ErrInvalidItemParameters, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.ShardingItemParameters) }),
	field("jobParameter", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.JobParameter) }),
	field("failover", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Bool(n, &c.Failover) }),
	field("misfire", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		var s string
		err := configdoc.String(n, &s)
		c.Misfire = MisfirePolicy(s)
		return err
	}),
	field("overlap", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		var s string
		err := configdoc.String(n, &s)
		c.Overlap = OverlapPolicy(s)
		return err
	}),
	field("monitorExecution", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		monitor := true
		err := configdoc.Bool(n, &monitor)
		c.Unmonitored = !monitor
		return err
	}),
	field("recordInterval", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.RecordInterval) }),
	field("maxTimeDiff", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.MaxTimeDiff) }),
	field("reconcileInterval", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.ReconcileInterval) }),
	field("shardingStrategy", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.ShardingStrategy) }),
	field("timeout", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.Timeout) }),
	field("start", ErrInvalidConfig, configdoc.StringOnly[Config]),
	field("end", ErrInvalidConfig, configdoc.StringOnly[Config]),
	field("limit", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Int(n, &c.Limit) }),
	field("exclude", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.StringList(n, &c.Exclude) }),
	field("jitter", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.Jitter) }),
	field("startingDeadline", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.StartingDeadline) }),
	field("pausedUntil", ErrInvalidConfig, configdoc.StringOnly[Config]),
	field("pauseNote", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.PauseNote) }),
	field("after", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.StringList(n, &c.After) }),
	field("onParentFailure", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		var s string
		err := configdoc.String(n, &s)
		c.OnParentFailure = ParentPolicy(s)
		return err
	}),
	field("afterTimeout", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Duration(n, &c.AfterTimeout) }),
	field("description", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.String(n, &c.Description) }),
	field("disabled", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Bool(n, &c.Disabled) }),
	field("overwrite", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error { return configdoc.Bool(n, &c.Overwrite) }),
	field("retry", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		p, err := configdoc.DecodeRetry(n, ErrUnknownKey)
		if err == nil {
			c.Retry = RetryPolicy(p)
		}
		return err
	}),
	field("alert", ErrInvalidConfig, func(c *Config, n *docsubset.Node) error {
		p, err := configdoc.DecodeAlert(n)
		if err == nil {
			c.Alert = AlertPolicy(p)
		}
		return err
	}),
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
	pairs, bad, lines := w.Pairs, w.Bad, w.Lines
	// The calendar's times without an offset are read in the job's time
	// zone, which may come after them in the document.
	if loc, err := c.location(); err == nil {
		times := map[string]*time.Time{"start": &c.Start, "end": &c.End, "pausedUntil": &c.PausedUntil}
		for _, p := range pairs {
			out := times[p.Key]
			if out == nil {
				continue
			}
			t, ok, err := configdoc.CalendarTime(p.Value, loc)
			if ok {
				*out = t
			} else if err != nil && !bad[p.Key] {
				bad[p.Key] = true
				errs = append(errs, &configError{place: place, key: p.Key, kind: ErrInvalidConfig, subject: p.Key,
					line: p.KeyNode.Line, detail: err.Error(), cause: err})
			}
		}
	}
	for _, e := range c.check(time.Now()) {
		if bad[e.key] {
			continue // already reported as a bad value
		}
		e.place = place
		e.line = lines[e.key]
		errs = append(errs, e)
	}
	return c, errs
}
