package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The audit trail: who did what to the namespace, when, from where, and
// how it ended. It is written by the operator's tools — the HTTP handler
// (package jobhttp), its console and the shardjob command — one row per
// operation, and kept by the history database beside the executions and
// events, pruned by the same retention pass (by Config.AuditMaxAge and
// Config.MaxRows).
//
// Unlike executions and events, an audit entry is written synchronously,
// in its own statement, and the caller learns whether it was written: a
// tool that promises not to act unaudited (jobhttp does) refuses the
// operation when the entry cannot be written.

// auditTable holds the audit trail.
const auditTable = "shardjob_history_audit"

func auditSchema(id string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + auditTable + ` (
	` + id + `,
	at_us BIGINT NOT NULL,
	who TEXT NOT NULL,
	role TEXT NOT NULL,
	op TEXT NOT NULL,
	job TEXT NOT NULL,
	server TEXT NOT NULL,
	items TEXT NOT NULL,
	via TEXT NOT NULL,
	remote TEXT NOT NULL,
	result TEXT NOT NULL,
	error TEXT NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + auditTable + `_at ON ` + auditTable + ` (at_us)`,
		`CREATE INDEX IF NOT EXISTS ` + auditTable + `_who ON ` + auditTable + ` (who, id)`,
		`CREATE INDEX IF NOT EXISTS ` + auditTable + `_job ON ` + auditTable + ` (job, id)`,
	}
}

// AuditResult is how an audited operation ended.
type AuditResult string

// Audit results.
const (
	// AuditStarted: the operation was about to be performed when the
	// entry was written, and no end was recorded (yet): it is running, or
	// its end could not be written.
	AuditStarted AuditResult = "started"
	// AuditOK: the operation was performed.
	AuditOK AuditResult = "ok"
	// AuditFailed: the operation was tried and failed; Error says why.
	AuditFailed AuditResult = "failed"
	// AuditRefused: the operation was not tried: the caller was not
	// allowed to (an unknown token, a role too low); Error says why.
	AuditRefused AuditResult = "refused"
)

func (r AuditResult) valid() bool {
	return r == AuditStarted || r == AuditOK || r == AuditFailed || r == AuditRefused
}

// AuditEntry is one operation in the audit trail.
type AuditEntry struct {
	// ID orders the entries: a later entry has a larger ID. Cursors are
	// IDs.
	ID int64 `json:"id"`
	// At is when the operation was asked for (now when zero on write).
	At time.Time `json:"at"`
	// Who is the token's name (HTTP, console), or the operating system
	// user or the --as name (shardjob command); empty when the caller
	// could not be identified (a missing or unknown token).
	Who string `json:"who"`
	// Role is Who's role (viewer, operator, admin), when known.
	Role string `json:"role,omitempty"`
	// Op is the operation: trigger, disable, enable, pause, resume,
	// shutdown, drain, undrain, rebalance, config, schedule, create,
	// remove, disable-items, enable-items.
	Op string `json:"op"`
	// Job, Server and Items are its target; empty where they do not
	// apply. Via dispatch, Job is the worker (the tenant's queue) and
	// Items the task's UUID.
	Job    string `json:"job,omitempty"`
	Server string `json:"server,omitempty"`
	Items  string `json:"items,omitempty"`
	// Via is the tool: http (the API and the console), dispatch (the
	// dispatcher's REST API) or cli.
	Via string `json:"via"`
	// Remote is where the request came from: the client's address
	// (HTTP), or the host the command ran on.
	Remote string `json:"remote"`
	// Result is started, ok, failed or refused; Error the reason of a
	// failure or refusal, folded to one line and bounded
	// (Config.MaxErrorLength).
	Result AuditResult `json:"result"`
	Error  string      `json:"error,omitempty"`
}

// MarshalJSON encodes e with its time in UTC, RFC 3339 with nanoseconds.
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	type plain AuditEntry
	p := plain(e)
	p.At = p.At.UTC()
	return json.Marshal(p)
}

// AuditFilter selects audit entries. The zero value selects the newest
// DefaultLimit entries.
type AuditFilter struct {
	// Who, Job, Server, Op and Via select entries with exactly that
	// value.
	Who, Job, Server, Op, Via string
	// Since and Until bound At: Since <= At < Until; zero is unbounded.
	Since, Until time.Time
	// Limit is the page's size: 1 to MaxLimit, 0 means DefaultLimit.
	Limit int
	// Before is a cursor: a previous page's Next.
	Before string
}

// AuditPage is one page of the audit trail, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// Next is the cursor of the following (older) page, empty on the last.
	Next string `json:"next,omitempty"`
}

// maxAuditField bounds the text fields of an entry other than Error.
const maxAuditField = 256

// auditRow checks e and makes it ready to store.
func auditRow(e AuditEntry, now time.Time, maxErr int) (AuditEntry, error) {
	if e.At.IsZero() {
		e.At = now
	}
	if e.Result == "" {
		e.Result = AuditStarted
	}
	switch {
	case strings.TrimSpace(e.Op) == "":
		return e, fmt.Errorf("%w: an audit entry needs its operation (Op)", ErrInvalidAudit)
	case !e.Result.valid():
		return e, fmt.Errorf("%w: audit result %q is not started, ok, failed or refused", ErrInvalidAudit, e.Result)
	case e.At.UnixMicro() <= 0 || e.At.UnixMicro() > maxMicros:
		return e, fmt.Errorf("%w: audit time %s is out of range", ErrInvalidAudit, e.At.Format(time.RFC3339))
	}
	for _, f := range []*string{&e.Who, &e.Role, &e.Op, &e.Job, &e.Server, &e.Items, &e.Via, &e.Remote} {
		*f = oneLine(*f, maxAuditField)
	}
	e.Error = oneLine(e.Error, maxErr)
	return e, nil
}

// insertAudit writes one entry and returns its ID.
func (s *store) insertAudit(ctx context.Context, e AuditEntry) (int64, error) {
	const cols = `at_us, who, role, op, job, server, items, via, remote, result, error`
	args := []any{micros(e.At), e.Who, e.Role, e.Op, e.Job, e.Server, e.Items, e.Via, e.Remote, string(e.Result), e.Error}
	var id int64
	var err error
	if s.driver == DriverPostgres {
		err = s.db.QueryRowContext(ctx, s.q(`INSERT INTO `+auditTable+` (`+cols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?) RETURNING id`), args...).Scan(&id)
	} else {
		var res sql.Result
		res, err = s.db.ExecContext(ctx, `INSERT INTO `+auditTable+` (`+cols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?)`, args...)
		if err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("history: writing an audit entry: %w", err)
	}
	return id, nil
}

// endAudit records how the entry id ended; job fills its job when it was
// not known at the start (a job created from a document).
func (s *store) endAudit(ctx context.Context, id int64, job string, result AuditResult, errText string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE `+auditTable+` SET result = ?, error = ?, job = CASE WHEN job = '' THEN ? ELSE job END WHERE id = ?`),
		string(result), errText, job, id)
	if err != nil {
		return fmt.Errorf("history: writing the end of audit entry %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("history: writing the end of audit entry %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: no audit entry %d", ErrInvalidAudit, id)
	}
	return nil
}

const auditCols = `id, at_us, who, role, op, job, server, items, via, remote, result, error`

func (s *store) queryAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	w, args, limit, err := where(Filter{Job: f.Job, Server: f.Server, Since: f.Since, Until: f.Until, Limit: f.Limit, Before: f.Before}, "at_us", "")
	if err != nil {
		return AuditPage{}, err
	}
	for _, c := range []struct{ col, v string }{{"who", f.Who}, {"op", f.Op}, {"via", f.Via}} {
		if c.v == "" {
			continue
		}
		if w == "" {
			w = " WHERE " + c.col + " = ?"
		} else {
			w += " AND " + c.col + " = ?"
		}
		args = append(args, c.v)
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+auditCols+` FROM `+auditTable+w+` ORDER BY id DESC LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return AuditPage{}, fmt.Errorf("history: reading the audit trail: %w", err)
	}
	defer rows.Close()
	p := AuditPage{Entries: []AuditEntry{}}
	for rows.Next() {
		var v [12]any
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11]); err != nil {
			return AuditPage{}, fmt.Errorf("history: reading the audit trail: %w", err)
		}
		r := &rowReader{table: auditTable}
		r.id = r.int("id", v[0])
		e := AuditEntry{ID: r.id, At: r.time("at_us", v[1]), Who: r.str("who", v[2]), Role: r.str("role", v[3]),
			Op: r.str("op", v[4]), Job: r.str("job", v[5]), Server: r.str("server", v[6]), Items: r.str("items", v[7]),
			Via: r.str("via", v[8]), Remote: r.str("remote", v[9]), Result: AuditResult(r.str("result", v[10])), Error: r.str("error", v[11])}
		if r.err == nil && !e.Result.valid() {
			r.fail("result", v[10], "is not started, ok, failed or refused")
		}
		if r.err != nil {
			return AuditPage{}, r.err
		}
		p.Entries = append(p.Entries, e)
	}
	if err := rows.Err(); err != nil {
		return AuditPage{}, fmt.Errorf("history: reading the audit trail: %w", err)
	}
	if len(p.Entries) > limit {
		p.Entries = p.Entries[:limit]
		p.Next = strconv.FormatInt(p.Entries[limit-1].ID, 10)
	}
	return p, nil
}

// auditWrite writes e now, bounded by cfg.WriteTimeout. The caller holds
// its closed flag's read lock.
func auditWrite(ctx context.Context, st *store, cfg Config, now time.Time, e AuditEntry) (int64, error) {
	e, err := auditRow(e, now, cfg.MaxErrorLength)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.WriteTimeout)
	defer cancel()
	return st.insertAudit(ctx, e)
}

// auditEnd records an entry's end, bounded by cfg.WriteTimeout.
func auditEnd(ctx context.Context, st *store, cfg Config, id int64, job string, result AuditResult, errText string) error {
	if !result.valid() || result == AuditStarted {
		return fmt.Errorf("%w: an audit entry ends ok, failed or refused, not %q", ErrInvalidAudit, result)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.WriteTimeout)
	defer cancel()
	return st.endAudit(ctx, id, oneLine(job, maxAuditField), result, oneLine(errText, cfg.MaxErrorLength))
}

// Audit writes e to the audit trail now, in one statement bounded by
// Config.WriteTimeout, and returns its ID; it does not go through the
// buffer, so that the caller knows it was written. An entry with no
// Result is written as AuditStarted: record its end with EndAudit. An
// entry without Op, or with an unknown Result, is ErrInvalidAudit.
func (r *Recorder) Audit(ctx context.Context, e AuditEntry) (int64, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return 0, ErrClosed
	}
	return auditWrite(ctx, r.st, r.cfg, r.now(), e)
}

// EndAudit records how the operation of the entry id (written by Audit as
// AuditStarted) ended: result AuditOK, or AuditFailed with errText. job
// names the entry's job when it was not known at its start (a job created
// from a document); empty keeps the entry's.
func (r *Recorder) EndAudit(ctx context.Context, id int64, job string, result AuditResult, errText string) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	return auditEnd(ctx, r.st, r.cfg, id, job, result, errText)
}

// QueryAudit returns a page of the audit trail, newest first.
func (r *Recorder) QueryAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	return r.st.queryAudit(ctx, f)
}

// QueryAudit returns a page of the audit trail, newest first. A database
// written before the audit trail existed has none: ErrNoDatabase.
func (r *Reader) QueryAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	p, err := r.st.queryAudit(ctx, f)
	if err != nil && !r.st.hasAudit(ctx) {
		return p, fmt.Errorf("%w: the database holds no audit trail (table %s)", ErrNoDatabase, auditTable)
	}
	return p, err
}

// Auditor writes and reads the audit trail alone, for a tool that records
// operations but runs no job: the shardjob command and its console. It
// creates the history tables if they are missing, and runs no goroutine
// and no retention (the instances' Recorders prune the trail, by
// Config.AuditMaxAge). It is safe for concurrent use.
type Auditor struct {
	st  *store
	cfg Config

	mu     sync.RWMutex
	closed bool
}

// OpenAuditor connects to the history database for the audit trail,
// creating the tables if they are missing. Close it when done.
func OpenAuditor(ctx context.Context, cfg Config) (*Auditor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	return &Auditor{st: st, cfg: cfg}, nil
}

// Audit writes e now, as Recorder.Audit.
func (a *Auditor) Audit(ctx context.Context, e AuditEntry) (int64, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return 0, ErrClosed
	}
	return auditWrite(ctx, a.st, a.cfg, time.Now(), e)
}

// EndAudit records how the operation of entry id ended, as
// Recorder.EndAudit.
func (a *Auditor) EndAudit(ctx context.Context, id int64, job string, result AuditResult, errText string) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return ErrClosed
	}
	return auditEnd(ctx, a.st, a.cfg, id, job, result, errText)
}

// QueryAudit returns a page of the audit trail, newest first.
func (a *Auditor) QueryAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	return a.st.queryAudit(ctx, f)
}

// Close closes the database; later writes are ErrClosed.
func (a *Auditor) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	return a.st.close()
}

// hasAudit reports whether the audit table is there.
func (s *store) hasAudit(ctx context.Context) bool {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM `+auditTable+` WHERE 1 = 0`)
	if err != nil {
		return false
	}
	return rows.Close() == nil
}
