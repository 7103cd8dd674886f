package job

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// legacyConfigDoc is the document as Encode wrote it through yaml/v3's
// Marshal before the writer of internal/docsubset: Encode must still
// write exactly these bytes, which every instance already running reads.
type legacyConfigDoc struct {
	Name                   string          `yaml:"name"`
	Cron                   string          `yaml:"cron"`
	TimeZone               string          `yaml:"timeZone"`
	ShardingTotalCount     int             `yaml:"shardingTotalCount"`
	ItemsPerShard          int             `yaml:"itemsPerShard,omitempty"`
	ShardingItemParameters string          `yaml:"shardingItemParameters"`
	JobParameter           string          `yaml:"jobParameter"`
	Failover               bool            `yaml:"failover"`
	Misfire                string          `yaml:"misfire"`
	Overlap                string          `yaml:"overlap,omitempty"`
	MonitorExecution       bool            `yaml:"monitorExecution"`
	RecordInterval         string          `yaml:"recordInterval,omitempty"`
	MaxTimeDiff            string          `yaml:"maxTimeDiff"`
	ReconcileInterval      string          `yaml:"reconcileInterval"`
	ShardingStrategy       string          `yaml:"shardingStrategy"`
	Timeout                string          `yaml:"timeout,omitempty"`
	Start                  string          `yaml:"start,omitempty"`
	End                    string          `yaml:"end,omitempty"`
	Limit                  int             `yaml:"limit,omitempty"`
	Exclude                string          `yaml:"exclude,omitempty"`
	Jitter                 string          `yaml:"jitter,omitempty"`
	StartingDeadline       string          `yaml:"startingDeadline,omitempty"`
	PausedUntil            string          `yaml:"pausedUntil,omitempty"`
	PauseNote              string          `yaml:"pauseNote,omitempty"`
	After                  string          `yaml:"after,omitempty"`
	OnParentFailure        string          `yaml:"onParentFailure,omitempty"`
	AfterTimeout           string          `yaml:"afterTimeout,omitempty"`
	Description            string          `yaml:"description"`
	Disabled               bool            `yaml:"disabled"`
	Overwrite              bool            `yaml:"overwrite"`
	Retry                  *legacyRetryDoc `yaml:"retry,omitempty"`
	Alert                  *legacyAlertDoc `yaml:"alert,omitempty"`
}

type legacyRetryDoc struct {
	Attempts   int     `yaml:"attempts"`
	Backoff    string  `yaml:"backoff,omitempty"`
	MaxBackoff string  `yaml:"maxBackoff,omitempty"`
	Jitter     float64 `yaml:"jitter,omitempty"`
}

type legacyAlertDoc struct {
	Late      string `yaml:"late,omitempty"`
	NotRunFor string `yaml:"notRunFor,omitempty"`
}

// legacyEncode is c's document as yaml/v3's Marshal wrote it.
func legacyEncode(c Config) []byte {
	d := legacyConfigDoc{
		Name: c.Name, Cron: c.Cron, TimeZone: c.TimeZone, ShardingTotalCount: c.ShardingTotalCount,
		ItemsPerShard: c.ItemsPerShard, ShardingItemParameters: c.ShardingItemParameters, JobParameter: c.JobParameter,
		Failover: c.Failover, Misfire: string(c.Misfire), Overlap: string(c.Overlap), MonitorExecution: !c.Unmonitored,
		RecordInterval: configdoc.DurationText(c.RecordInterval), MaxTimeDiff: c.MaxTimeDiff.String(),
		ReconcileInterval: c.ReconcileInterval.String(), ShardingStrategy: c.ShardingStrategy,
		Timeout: configdoc.DurationText(c.Timeout), Start: configdoc.TimeText(c.Start), End: configdoc.TimeText(c.End), Limit: c.Limit,
		Exclude: c.Exclude, Jitter: configdoc.DurationText(c.Jitter), StartingDeadline: configdoc.DurationText(c.StartingDeadline),
		PausedUntil: configdoc.TimeText(c.PausedUntil), PauseNote: c.PauseNote, After: c.After,
		OnParentFailure: string(c.OnParentFailure), AfterTimeout: configdoc.DurationText(c.AfterTimeout),
		Description: c.Description, Disabled: c.Disabled, Overwrite: c.Overwrite,
	}
	if p := c.Retry; p != (RetryPolicy{}) {
		d.Retry = &legacyRetryDoc{Attempts: p.Attempts, Backoff: configdoc.DurationText(p.Backoff), MaxBackoff: configdoc.DurationText(p.MaxBackoff), Jitter: p.Jitter}
	}
	if !c.Alert.IsZero() {
		d.Alert = &legacyAlertDoc{Late: configdoc.DurationText(c.Alert.Late), NotRunFor: configdoc.DurationText(c.Alert.NotRunFor)}
	}
	out, err := yaml.Marshal(d)
	if err != nil {
		panic(err)
	}
	return out
}

// TestConfigFieldsMatchDocument: the decoder's keys are the document's,
// in the order Encode writes them.
func TestConfigFieldsMatchDocument(t *testing.T) {
	dt := reflect.TypeFor[legacyConfigDoc]()
	if dt.NumField() != len(configFields) {
		t.Fatalf("the document has %d keys, configFields %d", dt.NumField(), len(configFields))
	}
	for i, f := range configFields {
		if tag, _, _ := strings.Cut(dt.Field(i).Tag.Get("yaml"), ","); tag != f.Key {
			t.Errorf("the document's key %d is %q, configFields has %q", i, tag, f.Key)
		}
	}
	if n := reflect.TypeFor[Config]().NumField(); n != len(configFields) {
		t.Errorf("Config has %d fields but the document %d keys", n, len(configFields))
	}
}
