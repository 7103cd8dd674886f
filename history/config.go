package history

import (
	"fmt"
	"log/slog"
	"time"
)

// Drivers.
const (
	// DriverSQLite is the embedded default: one file next to the
	// application (pure Go, modernc.org/sqlite), in WAL mode.
	DriverSQLite = "sqlite"
	// DriverPostgres is PostgreSQL through pgx, for a cluster whose
	// instances share one history.
	DriverPostgres = "postgres"
)

// Defaults of Config's fields.
const (
	DefaultSQLiteFile        = "shardjob-history.db"
	DefaultBufferSize        = 10000
	DefaultBatchSize         = 500
	DefaultFlushInterval     = time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultMaxBackoff        = 10 * time.Second
	DefaultMaxAge            = 7 * 24 * time.Hour
	DefaultAuditMaxAge       = 90 * 24 * time.Hour
	DefaultMaxRows           = 1_000_000
	DefaultRetentionInterval = 10 * time.Minute
	DefaultRetentionBatch    = 5000
	DefaultDropLogInterval   = time.Minute
	DefaultMaxErrorLength    = 2000
)

// Limits of Config's fields.
const (
	// MaxBatchSize bounds BatchSize: a batch is one INSERT per table,
	// and its parameters must stay under SQLite's limit.
	MaxBatchSize = 2000
	// MaxBufferSize bounds BufferSize.
	MaxBufferSize = 10_000_000
)

// Config configures Open and OpenReader. The zero value of every field
// but Driver and DSN means its default; negative values are refused.
type Config struct {
	// Driver is DriverSQLite (default) or DriverPostgres. The program
	// links the database by importing package store/sqlite or
	// store/postgres; Open and OpenReader refuse a Driver whose package
	// it did not import.
	Driver string
	// DSN is the database: for SQLite a file path (default
	// DefaultSQLiteFile, in the working directory) or a "file:" URI; for
	// PostgreSQL a connection string (required), such as
	// "postgres://user@db:5432/shardjob?sslmode=verify-full".
	DSN string
	// BufferSize is how many records (executions and events) wait for the
	// writer at most; a record that finds the buffer full is dropped and
	// counted in Stats.Dropped. Default DefaultBufferSize (10,000).
	BufferSize int
	// BatchSize is how many records one write commits at most (one
	// transaction). Default DefaultBatchSize (500), at most MaxBatchSize.
	BatchSize int
	// FlushInterval is how long a record waits for its batch to fill
	// before it is written anyway. Default 1s.
	FlushInterval time.Duration
	// WriteTimeout bounds one batch write. Default 10s.
	WriteTimeout time.Duration
	// MaxBackoff bounds the wait between retries of a failed batch; the
	// wait starts at FlushInterval/10 and doubles. Default 10s.
	MaxBackoff time.Duration
	// MaxAge is how long rows are kept. Default 7 days.
	MaxAge time.Duration
	// AuditMaxAge is how long audit entries are kept: longer than the
	// executions, as who changed what is asked about later. Default 90
	// days.
	AuditMaxAge time.Duration
	// MaxRows is how many rows each table keeps at most (the newest).
	// Default 1,000,000.
	MaxRows int64
	// RetentionInterval is how often old rows are deleted. Default 10 min.
	RetentionInterval time.Duration
	// RetentionBatch is how many rows one DELETE removes at most; a
	// retention pass runs at most 20 of them per table and rule, so that
	// no pass holds the database for long. Default 5,000.
	RetentionBatch int
	// DropLogInterval is how often, at most, dropped records and failed
	// writes are logged: the first at once, then one line per interval
	// with the count since the last line. Default 1 min.
	DropLogInterval time.Duration
	// MaxErrorLength bounds the error text stored with an execution or
	// event, in bytes (it is also folded to one line). Default 2,000.
	MaxErrorLength int
	// Logger receives the writer's warnings (drops, failed writes) and
	// notices (writing again). Default slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	switch c.Driver {
	case "":
		c.Driver = DriverSQLite
	case DriverSQLite, DriverPostgres:
	default:
		return c, fmt.Errorf("%w: Driver %q is neither %q nor %q", ErrInvalidConfig, c.Driver, DriverSQLite, DriverPostgres)
	}
	if c.DSN == "" {
		if c.Driver == DriverPostgres {
			return c, fmt.Errorf("%w: DSN: PostgreSQL needs a connection string", ErrInvalidConfig)
		}
		c.DSN = DefaultSQLiteFile
	}
	ints := []struct {
		name     string
		v        *int
		def, max int
	}{
		{"BufferSize", &c.BufferSize, DefaultBufferSize, MaxBufferSize},
		{"BatchSize", &c.BatchSize, DefaultBatchSize, MaxBatchSize},
		{"RetentionBatch", &c.RetentionBatch, DefaultRetentionBatch, 1_000_000},
		{"MaxErrorLength", &c.MaxErrorLength, DefaultMaxErrorLength, 1 << 20},
	}
	for _, f := range ints {
		switch {
		case *f.v < 0 || *f.v > f.max:
			return c, fmt.Errorf("%w: %s %d must be from 1 to %d (0: default %d)", ErrInvalidConfig, f.name, *f.v, f.max, f.def)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"FlushInterval", &c.FlushInterval, DefaultFlushInterval},
		{"WriteTimeout", &c.WriteTimeout, DefaultWriteTimeout},
		{"MaxBackoff", &c.MaxBackoff, DefaultMaxBackoff},
		{"MaxAge", &c.MaxAge, DefaultMaxAge},
		{"AuditMaxAge", &c.AuditMaxAge, DefaultAuditMaxAge},
		{"RetentionInterval", &c.RetentionInterval, DefaultRetentionInterval},
		{"DropLogInterval", &c.DropLogInterval, DefaultDropLogInterval},
	}
	for _, f := range durs {
		switch {
		case *f.v < 0:
			return c, fmt.Errorf("%w: %s %v must not be negative (0: default %v)", ErrInvalidConfig, f.name, *f.v, f.def)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	switch {
	case c.MaxRows < 0:
		return c, fmt.Errorf("%w: MaxRows %d must not be negative (0: default %d)", ErrInvalidConfig, c.MaxRows, DefaultMaxRows)
	case c.MaxRows == 0:
		c.MaxRows = DefaultMaxRows
	}
	if c.BatchSize > c.BufferSize {
		return c, fmt.Errorf("%w: BatchSize %d is larger than BufferSize %d", ErrInvalidConfig, c.BatchSize, c.BufferSize)
	}
	if c.MaxBackoff < c.FlushInterval/10 {
		return c, fmt.Errorf("%w: MaxBackoff %v is under the first retry wait, FlushInterval/10 (%v)", ErrInvalidConfig, c.MaxBackoff, c.FlushInterval/10)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
