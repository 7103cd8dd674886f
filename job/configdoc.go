package job

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// The config document stored in a job's config node: Encode and the YAML
// it writes (configDoc), the part after the name line encoded once for
// jobs that differ only in their names.

// configDoc is the document Encode writes; its keys are configFields'.
type configDoc struct {
	Name                   string `yaml:"name"`
	Cron                   string `yaml:"cron"`
	TimeZone               string `yaml:"timeZone"`
	ShardingTotalCount     int    `yaml:"shardingTotalCount"`
	ItemsPerShard          int    `yaml:"itemsPerShard,omitempty"`
	ShardingItemParameters string `yaml:"shardingItemParameters"`
	JobParameter           string `yaml:"jobParameter"`
	Failover               bool   `yaml:"failover"`
	Misfire                string `yaml:"misfire"`
	Overlap                string `yaml:"overlap,omitempty"`
	MonitorExecution       bool   `yaml:"monitorExecution"`
	RecordInterval         string `yaml:"recordInterval,omitempty"`
	MaxTimeDiff            string `yaml:"maxTimeDiff"`
	ReconcileInterval      string `yaml:"reconcileInterval"`
	ShardingStrategy       string `yaml:"shardingStrategy"`
	// Timeout is left out when 0, so that a config without one reads the
	// same to instances that predate the key.
	Timeout string `yaml:"timeout,omitempty"`
	// The calendar's keys likewise, when unset.
	Start            string `yaml:"start,omitempty"`
	End              string `yaml:"end,omitempty"`
	Limit            int    `yaml:"limit,omitempty"`
	Exclude          string `yaml:"exclude,omitempty"`
	Jitter           string `yaml:"jitter,omitempty"`
	StartingDeadline string `yaml:"startingDeadline,omitempty"`
	PausedUntil      string `yaml:"pausedUntil,omitempty"`
	PauseNote        string `yaml:"pauseNote,omitempty"`
	After            string `yaml:"after,omitempty"`
	OnParentFailure  string `yaml:"onParentFailure,omitempty"`
	AfterTimeout     string `yaml:"afterTimeout,omitempty"`
	Description      string `yaml:"description"`
	Disabled         bool   `yaml:"disabled"`
	Overwrite        bool   `yaml:"overwrite"`
	// Retry is left out for the zero policy, as Timeout.
	Retry *retryDoc `yaml:"retry,omitempty"`
	// Alert is left out when unset, as Timeout is.
	Alert *alertDoc `yaml:"alert,omitempty"`
}

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
		var err error
		name, err = yaml.Marshal(c.Name)
		if err != nil || bytes.IndexByte(name, '\n') != len(name)-1 {
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

// marshalDoc encodes the whole document.
func (c Config) marshalDoc() ([]byte, error) {
	return yaml.Marshal(configDoc{
		Name:                   c.Name,
		Cron:                   c.Cron,
		TimeZone:               c.TimeZone,
		ShardingTotalCount:     c.ShardingTotalCount,
		ItemsPerShard:          c.ItemsPerShard,
		ShardingItemParameters: c.ShardingItemParameters,
		JobParameter:           c.JobParameter,
		Failover:               c.Failover,
		Misfire:                string(c.Misfire),
		Overlap:                string(c.Overlap),
		MonitorExecution:       !c.Unmonitored,
		RecordInterval:         timeoutText(c.RecordInterval),
		MaxTimeDiff:            c.MaxTimeDiff.String(),
		ReconcileInterval:      c.ReconcileInterval.String(),
		ShardingStrategy:       c.ShardingStrategy,
		Timeout:                timeoutText(c.Timeout),
		Start:                  configTimeText(c.Start),
		End:                    configTimeText(c.End),
		Limit:                  c.Limit,
		Exclude:                c.Exclude,
		Jitter:                 timeoutText(c.Jitter),
		StartingDeadline:       timeoutText(c.StartingDeadline),
		PausedUntil:            configTimeText(c.PausedUntil),
		PauseNote:              c.PauseNote,
		After:                  c.After,
		OnParentFailure:        string(c.OnParentFailure),
		AfterTimeout:           timeoutText(c.AfterTimeout),
		Description:            c.Description,
		Disabled:               c.Disabled,
		Overwrite:              c.Overwrite,
		Retry:                  retryDocOf(c.Retry),
		Alert:                  c.Alert.doc(),
	})
}

func timeoutText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
