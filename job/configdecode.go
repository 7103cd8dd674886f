package job

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/yamldoc"
)

// Decoding the config document: DecodeConfig and DecodeConfigNode, the
// document's keys (configFields) and the decoders of their values.

// configField is one key of the stored config document.
type configField struct {
	key    string
	kind   error // sentinel for a bad value; ErrInvalidConfig if none applies
	decode func(c *Config, n *yaml.Node) error
}

// configFields lists the keys of the document, in the order Encode writes
// them. Keys are case-sensitive.
var configFields = []configField{
	{"name", ErrInvalidName, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.Name) }},
	{"cron", ErrInvalidCron, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.Cron) }},
	{"timeZone", ErrInvalidTimeZone, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.TimeZone) }},
	{"shardingTotalCount", ErrInvalidShardingCount, func(c *Config, n *yaml.Node) error { return nodeInt(n, &c.ShardingTotalCount) }},
	{"itemsPerShard", ErrInvalidShardingCount, func(c *Config, n *yaml.Node) error { return nodeInt(n, &c.ItemsPerShard) }},
	{"shardingItemParameters", ErrInvalidItemParameters, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.ShardingItemParameters) }},
	{"jobParameter", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.JobParameter) }},
	{"failover", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeBool(n, &c.Failover) }},
	{"misfire", ErrInvalidConfig, func(c *Config, n *yaml.Node) error {
		var s string
		err := nodeString(n, &s)
		c.Misfire = MisfirePolicy(s)
		return err
	}},
	{"overlap", ErrInvalidConfig, func(c *Config, n *yaml.Node) error {
		var s string
		err := nodeString(n, &s)
		c.Overlap = OverlapPolicy(s)
		return err
	}},
	{"monitorExecution", ErrInvalidConfig, func(c *Config, n *yaml.Node) error {
		monitor := true
		err := nodeBool(n, &monitor)
		c.Unmonitored = !monitor
		return err
	}},
	{"recordInterval", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.RecordInterval) }},
	{"maxTimeDiff", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.MaxTimeDiff) }},
	{"reconcileInterval", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.ReconcileInterval) }},
	{"shardingStrategy", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.ShardingStrategy) }},
	{"timeout", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.Timeout) }},
	{"start", ErrInvalidConfig, nodeCalendarTime},
	{"end", ErrInvalidConfig, nodeCalendarTime},
	{"limit", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeInt(n, &c.Limit) }},
	{"exclude", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeStringList(n, &c.Exclude) }},
	{"jitter", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.Jitter) }},
	{"startingDeadline", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.StartingDeadline) }},
	{"pausedUntil", ErrInvalidConfig, nodeCalendarTime},
	{"pauseNote", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.PauseNote) }},
	{"after", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeStringList(n, &c.After) }},
	{"onParentFailure", ErrInvalidConfig, func(c *Config, n *yaml.Node) error {
		var s string
		err := nodeString(n, &s)
		c.OnParentFailure = ParentPolicy(s)
		return err
	}},
	{"afterTimeout", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeDuration(n, &c.AfterTimeout) }},
	{"description", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeString(n, &c.Description) }},
	{"disabled", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeBool(n, &c.Disabled) }},
	{"overwrite", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeBool(n, &c.Overwrite) }},
	{"retry", ErrInvalidConfig, nodeRetry},
	{"alert", ErrInvalidConfig, func(c *Config, n *yaml.Node) error { return nodeAlert(n, &c.Alert) }},
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
// errors. Every problem is reported, each wrapping ErrInvalidConfig and,
// where one applies, a specific sentinel such as ErrUnknownKey or
// ErrInvalidCron. On error the Config is the zero value.
//
// A document larger than MaxDocumentBytes, nesting deeper than
// MaxYAMLDepth, with an alias or merge key that refers to itself, or whose
// aliases and merge keys expand beyond YAMLNodeBudget is refused before
// any of it is used (ErrConfigTooLarge, ErrConfigTooComplex), as is a
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
	c, errs := decodeConfigNode(root, NodeOptions{})
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return c, nil
}

// NodeOptions say how DecodeConfigNode reads a job's mapping that is
// part of a larger document, such as an entry of a job file's jobs: list.
type NodeOptions struct {
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
	Key func(key, value *yaml.Node) error
}

// DecodeConfigNode decodes and validates one job's mapping n, a node of a
// larger YAML document, with the decoder DecodeConfig uses: the same keys
// and values, as strictly (an unknown key is ErrUnknownKey, naming its
// line and, for a near miss, the key probably meant), and the same
// checks, so that a job file and the stored document cannot disagree.
// Its keys besides the Config's are o's. Every problem is reported, in
// one error whose Unwrap() []error returns them, each wrapping
// ErrInvalidConfig and where one applies a specific sentinel; on error
// the Config is the zero value.
//
// n should come from a document read within the limits DecodeConfig
// applies (MaxYAMLDepth, YAMLNodeBudget): merge keys are followed again
// here, bounded in depth only.
func DecodeConfigNode(n *yaml.Node, o NodeOptions) (Config, error) {
	c, errs := decodeConfigNode(n, o)
	if len(errs) > 0 {
		return Config{}, joinConfigErrors(errs)
	}
	return c, nil
}

// decodeConfigNode is DecodeConfigNode, returning what it decoded with
// the problems.
func decodeConfigNode(n *yaml.Node, o NodeOptions) (Config, []error) {
	var c Config
	placeOf := o.Place
	if placeOf == nil {
		placeOf = jobPlace
	}
	n = yamldoc.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		line := 0
		if n != nil {
			line = n.Line
		}
		return c, []error{&configError{place: placeOf(""), subject: "job", line: line,
			detail: "must be a mapping of keys to values, got " + yamldoc.KindName(n)}}
	}
	pairs, perrs := mappingPairs(n)

	// Find the name first so that every error can carry it.
	for _, p := range pairs {
		if p.Key == "name" {
			if v := yamldoc.Resolve(p.Value); v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
				c.Name = v.Value
			}
		}
	}
	place := placeOf(c.Name)

	var errs []error
	for _, e := range perrs {
		e.place = place
		errs = append(errs, e)
	}
	known := make([]string, 0, len(configFields)+len(o.Keys))
	for _, f := range configFields {
		known = append(known, f.key)
	}
	known = append(known, o.Keys...)
	lines := map[string]int{}
	bad := map[string]bool{}
	for _, p := range pairs {
		lines[p.Key] = p.KeyNode.Line
		if slices.Contains(o.Keys, p.Key) {
			if o.Key == nil {
				continue
			}
			if err := o.Key(p.KeyNode, p.Value); err != nil {
				errs = append(errs, &configError{place: place, key: p.Key, subject: p.Key, line: p.KeyNode.Line,
					detail: err.Error(), cause: err})
			}
			continue
		}
		f, ok := findConfigField(p.Key)
		if !ok {
			e := unknownKeyError(place, p, known)
			errs = append(errs, e)
			if e.suggestion != "" && !hasPair(pairs, e.suggestion) {
				// The misspelt key stands for this one: do not also
				// report it as missing.
				bad[e.suggestion] = true
			}
			continue
		}
		if err := f.decode(&c, p.Value); err != nil {
			bad[p.Key] = true
			errs = append(errs, &configError{place: place, key: p.Key, kind: f.kind, subject: p.Key,
				line: p.KeyNode.Line, detail: err.Error(), cause: err})
		}
	}
	// The calendar's times without an offset are read in the job's time
	// zone, which may come after them in the document.
	if loc, err := c.location(); err == nil {
		for _, p := range pairs {
			if err := c.decodeCalendarTime(p.Key, p.Value, loc); err != nil && !bad[p.Key] {
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

func hasPair(pairs []yamldoc.Pair, key string) bool {
	for _, p := range pairs {
		if p.Key == key {
			return true
		}
	}
	return false
}

func findConfigField(key string) (configField, bool) {
	for _, f := range configFields {
		if f.key == key {
			return f, true
		}
	}
	return configField{}, false
}

// nodeString decodes a scalar as a string (yamldoc.String).
func nodeString(n *yaml.Node, out *string) error { return yamldoc.String(n, out) }

// nodeCalendarTime checks that a calendar time's value is a string; it is
// read once the job's time zone is known (decodeCalendarTime).
func nodeCalendarTime(_ *Config, n *yaml.Node) error {
	var s string
	return nodeString(n, &s)
}

// decodeCalendarTime reads the calendar time of key, if key is one, in loc.
func (c *Config) decodeCalendarTime(key string, n *yaml.Node, loc *time.Location) error {
	var out *time.Time
	switch key {
	case "start":
		out = &c.Start
	case "end":
		out = &c.End
	case "pausedUntil":
		out = &c.PausedUntil
	default:
		return nil
	}
	var s string
	if err := nodeString(n, &s); err != nil {
		return nil // reported by its field's decode
	}
	if strings.TrimSpace(s) == "" {
		*out = time.Time{}
		return nil
	}
	t, err := parseConfigTime(s, loc)
	if err != nil {
		return err
	}
	*out = t
	return nil
}

// nodeStringList decodes a string, or a list of strings joined with
// commas.
func nodeStringList(n *yaml.Node, out *string) error {
	n = yamldoc.Resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nodeString(n, out)
	}
	parts := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		var s string
		if err := nodeString(e, &s); err != nil {
			return fmt.Errorf("entry %d %w", i+1, err)
		}
		if strings.Contains(s, ",") {
			return fmt.Errorf("entry %d %s has a comma: one entry per list item", i+1, quoteShort(s))
		}
		parts = append(parts, s)
	}
	*out = strings.Join(parts, ",")
	return nil
}

// nodeBool decodes a YAML boolean; a quoted "true" is an error.
func nodeBool(n *yaml.Node, out *bool) error {
	n = yamldoc.Resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return fmt.Errorf("must be true or false, got %s", yamldoc.KindName(n))
	}
	return n.Decode(out)
}

// nodeInt decodes a YAML integer that fits an int.
func nodeInt(n *yaml.Node, out *int) error {
	n = yamldoc.Resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return fmt.Errorf("must be an integer, got %s", yamldoc.KindName(n))
	}
	if err := n.Decode(out); err != nil {
		return fmt.Errorf("%s is out of range", n.Value)
	}
	return nil
}

// nodeDuration decodes a Go duration string such as "5s" or "1m30s"; a
// bare 0 is accepted too.
func nodeDuration(n *yaml.Node, out *time.Duration) error {
	n = yamldoc.Resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return fmt.Errorf(`must be a duration such as "5s", got %s`, yamldoc.KindName(n))
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf(`%s is not a duration such as "5s" or "1m30s"`, quoteShort(n.Value))
	}
	*out = d
	return nil
}
