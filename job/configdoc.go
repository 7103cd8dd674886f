package job

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardjob/shardjob/internal/yamlsubset"
)

// The config document stored in a job's config node: Encode and the YAML
// it writes (marshalDoc, through internal/yamlsubset's writer), the part
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
// the rest of the document once (see docTail): the YAML encoder is most
// of the client's CPU for registering a new job.
func (c Config) marshal() ([]byte, error) {
	if !configNameRE.MatchString(c.Name) || len(c.Name) > MaxNameLength {
		return c.marshalDoc()
	}
	// The name is the first key; the rest of the document does not depend
	// on it as long as the name is one line.
	name := []byte(c.Name + "\n")
	if !plainName(c.Name) {
		var w yamlsubset.Writer
		w.String(nameKey[:len(nameKey)-2], c.Name)
		name = bytes.TrimPrefix(w.Bytes(), []byte(nameKey))
		if bytes.IndexByte(name, '\n') != len(name)-1 {
			return c.marshalDoc()
		}
	}
	tail, err := c.docTail()
	if err != nil {
		return c.marshalDoc()
	}
	doc := make([]byte, 0, len(nameKey)+len(name)+len(tail))
	doc = append(append(append(doc, nameKey...), name...), tail...)
	return doc, nil
}

// plainName reports whether the encoder writes name as it is: it starts
// with an ASCII letter, has only letters, digits, '.', '_' and '-', and is
// no word that YAML reads as a boolean or null.
func plainName(name string) bool {
	if name == "" || !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return false
		}
	}
	switch strings.ToLower(name) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// nameKey starts every config document.
const nameKey = "name: "

// tailEntry is a document's part after the name line, for a config with
// the name left out.
type tailEntry struct {
	key  Config
	tail []byte
}

// lastTail is the latest tailEntry: jobs added one after another mostly
// share everything but their names.
var lastTail atomic.Pointer[tailEntry]

// docTail returns the document's part after the name line.
func (c Config) docTail() ([]byte, error) {
	key := c
	key.Name = ""
	if e := lastTail.Load(); e != nil && e.key == key {
		return e.tail, nil
	}
	probe := key
	probe.Name = "x"
	doc, err := probe.marshalDoc()
	if err != nil {
		return nil, err
	}
	head := nameKey + "x\n"
	if !bytes.HasPrefix(doc, []byte(head)) {
		return nil, errors.New("unexpected document layout")
	}
	tail := doc[len(head):]
	lastTail.Store(&tailEntry{key: key, tail: tail})
	return tail, nil
}

// marshalDoc encodes the whole document: every key in configFields'
// order, those marked so left out when unset.
func (c Config) marshalDoc() ([]byte, error) {
	var w yamlsubset.Writer
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
	omitEmpty(&w, "overlap", string(c.Overlap))
	w.Bool("monitorExecution", !c.Unmonitored)
	omitEmpty(&w, "recordInterval", timeoutText(c.RecordInterval))
	w.String("maxTimeDiff", c.MaxTimeDiff.String())
	w.String("reconcileInterval", c.ReconcileInterval.String())
	w.String("shardingStrategy", c.ShardingStrategy)
	// The keys below are left out when unset, so that a config without
	// them reads the same to instances that predate them.
	omitEmpty(&w, "timeout", timeoutText(c.Timeout))
	omitEmpty(&w, "start", configTimeText(c.Start))
	omitEmpty(&w, "end", configTimeText(c.End))
	if c.Limit != 0 {
		w.Int("limit", c.Limit)
	}
	omitEmpty(&w, "exclude", c.Exclude)
	omitEmpty(&w, "jitter", timeoutText(c.Jitter))
	omitEmpty(&w, "startingDeadline", timeoutText(c.StartingDeadline))
	omitEmpty(&w, "pausedUntil", configTimeText(c.PausedUntil))
	omitEmpty(&w, "pauseNote", c.PauseNote)
	omitEmpty(&w, "after", c.After)
	omitEmpty(&w, "onParentFailure", string(c.OnParentFailure))
	omitEmpty(&w, "afterTimeout", timeoutText(c.AfterTimeout))
	w.String("description", c.Description)
	w.Bool("disabled", c.Disabled)
	w.Bool("overwrite", c.Overwrite)
	if p := c.Retry; p != (RetryPolicy{}) {
		w.Map("retry")
		w.Int("attempts", p.Attempts)
		omitEmpty(&w, "backoff", timeoutText(p.Backoff))
		omitEmpty(&w, "maxBackoff", timeoutText(p.MaxBackoff))
		if p.Jitter != 0 {
			w.Float("jitter", p.Jitter)
		}
		w.End()
	}
	if p := c.Alert; !p.IsZero() {
		w.Map("alert")
		omitEmpty(&w, "late", timeoutText(p.Late))
		omitEmpty(&w, "notRunFor", timeoutText(p.NotRunFor))
		w.End()
	}
	return w.Bytes(), nil
}

// omitEmpty writes key with s, unless s is "".
func omitEmpty(w *yamlsubset.Writer, key, s string) {
	if s != "" {
		w.String(key, s)
	}
}

func timeoutText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
