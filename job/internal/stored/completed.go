package stored

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/shardjob/shardjob/job/internal/fireplan"
)

// Completed is the value of an item's completed record
// (execution/{item}/completed): the latest fire the item's runs cover,
// and which earlier ones they covered. A make-up run (a misfire or a
// failover run) that began at B makes up for every fire from Since to
// the last fire at or before B; Fire is that last fire. Times are ms
// since the epoch.
type Completed struct {
	Server string `json:"server"`
	Fire   int64  `json:"fire"`
	Since  int64  `json:"since,omitempty"`
	// Ran lists the runs of consecutive fires known to have been covered,
	// oldest first, each as [first, last] (fireplan.Cover.Ran): this
	// execution's and what earlier records said. A make-up run runs only
	// fires it does not list.
	Ran [][2]int64 `json:"ran,omitempty"`
	// Floor is read from records written before Ran existed: every fire
	// from Floor through Fire had run.
	Floor int64  `json:"floor,omitempty"`
	Kind  string `json:"kind"`
	Begin int64  `json:"begin"`
	End   int64  `json:"end"`
	Error string `json:"error,omitempty"`
	// Failed lists the item's recent runs that failed, oldest first (at
	// most maxFailed, within the fires Ran speaks of): a dependent checking
	// a fire after later ones ran reads that fire's result here, not the
	// latest run's in Error.
	Failed []FailedRun `json:"failed,omitempty"`
	// Journal names the completion journal (Journal) of the process that
	// wrote the record while it held the item: fires completed after the
	// record was written are in that journal.
	Journal string `json:"journal,omitempty"`
}

// DecodeCompleted decodes a completed record: a fire from 1970 to 9999,
// and runs of fires that end by 9999. What it covers is read by Cover,
// which leaves out any run that is not a run.
func DecodeCompleted(data []byte) (Completed, error) {
	var m Completed
	if err := decodeJSON(data, &m, "completed record"); err != nil {
		return Completed{}, err
	}
	if !validMillis(m.Fire) {
		return Completed{}, fmt.Errorf("%w: completed record with fire %d", ErrBadValue, m.Fire)
	}
	for _, s := range m.Ran {
		if s[0] > maxMillis || s[1] > maxMillis {
			return Completed{}, fmt.Errorf("%w: completed record with a run of fires %d-%d", ErrBadValue, s[0], s[1])
		}
	}
	return m, nil
}

// Cover is what m says ran: its runs of covered fires, or, for a record
// written without them, the one run from Floor (or Since) through Fire.
func (m *Completed) Cover() fireplan.Cover {
	if len(m.Ran) > 0 {
		return RanCover(m.Ran)
	}
	first := m.Fire
	for _, t := range []int64{m.Since, m.Floor} {
		if t > 0 && t < first {
			first = t
		}
	}
	return fireplan.CoverOf(fireplan.Span{First: time.UnixMilli(first), Last: time.UnixMilli(m.Fire)})
}

// RanCover is the cover of runs of fires as a record (Completed.Ran) or a
// journal entry (Journal.Entry) stores them; runs with no first fire, or
// a last before it, are left out.
func RanCover(ran [][2]int64) fireplan.Cover {
	spans := make([]fireplan.Span, 0, len(ran))
	for _, s := range ran {
		if s[0] > 0 {
			spans = append(spans, fireplan.Span{First: time.UnixMilli(s[0]), Last: time.UnixMilli(s[1])})
		}
	}
	return fireplan.CoverOf(spans...)
}

// maxFailed bounds the failed runs an item's record keeps: the newest,
// which are what a dependent checking late asks about.
const maxFailed = 8

// maxFailedError bounds the error each listed failed run keeps; the
// latest run's error is kept whole (up to MaxRecordedError) in Error.
const maxFailedError = 256

// FailedRun is one recent run of an item that failed: the fires it stood
// for, First through Last (ms since the epoch), and its error, cut short.
type FailedRun struct {
	First int64  `json:"first"`
	Last  int64  `json:"last"`
	Error string `json:"error"`
}

// FailedAfter is the failed runs a record lists once a run for the fires
// first through last has ended with err, over prior's list: the run added
// if it failed; the earlier entries it stood for again dropped if it
// succeeded (a fire run again after a crash: its latest result counts);
// those older than cov's oldest span dropped (the record no longer speaks
// of those fires); the newest maxFailed kept. Nil when none.
func FailedAfter(prior []FailedRun, cov fireplan.Cover, first, last time.Time, err error) []FailedRun {
	if len(prior) == 0 && err == nil {
		return nil
	}
	f, l := first.UnixMilli(), last.UnixMilli()
	var oldest int64
	if spans := cov.Spans(); len(spans) > 0 {
		oldest = spans[0].First.UnixMilli()
	}
	out := make([]FailedRun, 0, len(prior)+1)
	for _, p := range prior {
		if p.Last < oldest || (err == nil && p.First >= f && p.Last <= l) || (err != nil && p.First == f && p.Last == l) {
			continue
		}
		out = append(out, p)
	}
	if err != nil {
		out = append(out, FailedRun{First: f, Last: l, Error: cutError(RecordedError(err), maxFailedError)})
	}
	slices.SortFunc(out, func(a, b FailedRun) int { return cmp.Compare(a.First, b.First) })
	if len(out) > maxFailed {
		out = out[len(out)-maxFailed:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Failure returns the error of the first run in m.Failed, or of m's own
// run, that stood for a fire from first through last ("" if none failed),
// and the first such fire. m's Error is its latest run's, kept whole.
func (m *Completed) Failure(first, last time.Time) (fire time.Time, msg string) {
	f, l := first.UnixMilli(), last.UnixMilli()
	for _, r := range m.Failed {
		if r.Last >= f && r.First <= l {
			if r.Last == m.Fire && m.Error != "" {
				return time.UnixMilli(max(r.First, f)), m.Error
			}
			return time.UnixMilli(max(r.First, f)), r.Error
		}
	}
	if len(m.Failed) == 0 && m.Error != "" && m.Fire >= f {
		// A record written before Failed existed: its latest run's error.
		return time.UnixMilli(m.Fire), m.Error
	}
	return time.Time{}, ""
}

// cutError cuts msg at n bytes, on a character boundary.
func cutError(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}

// MaxRecordedError bounds the error an item's completed record keeps: the
// record is written with the item's other records in one transaction, and
// an error of any size a job returns must not make it too large to write
// (the fires it covers would then look unrun).
const MaxRecordedError = 4 << 10

// RecordedError is err's message as a completed record keeps it: cut at
// MaxRecordedError bytes, on a character boundary, saying how much was
// left out.
func RecordedError(err error) string {
	msg := err.Error()
	if len(msg) <= MaxRecordedError {
		return msg
	}
	cut := MaxRecordedError
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + fmt.Sprintf("… (%d bytes more)", len(msg)-cut)
}

// Marshal encodes m as json.Marshal does, byte for byte, without its
// reflection: a completion writes one per item.
func (m *Completed) Marshal() []byte {
	b := make([]byte, 0, 96+len(m.Server)+len(m.Kind)+len(m.Error)+40*len(m.Ran)+(60+maxFailedError)*len(m.Failed))
	b = append(b, `{"server":`...)
	b = appendJSONString(b, m.Server)
	b = append(b, `,"fire":`...)
	b = strconv.AppendInt(b, m.Fire, 10)
	if m.Since != 0 {
		b = append(b, `,"since":`...)
		b = strconv.AppendInt(b, m.Since, 10)
	}
	if len(m.Ran) > 0 {
		b = append(b, `,"ran":`...)
		b = appendRan(b, m.Ran)
	}
	if m.Floor != 0 {
		b = append(b, `,"floor":`...)
		b = strconv.AppendInt(b, m.Floor, 10)
	}
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, m.Kind)
	b = append(b, `,"begin":`...)
	b = strconv.AppendInt(b, m.Begin, 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, m.End, 10)
	if m.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, m.Error)
	}
	if len(m.Failed) > 0 {
		b = append(b, `,"failed":[`...)
		for i, f := range m.Failed {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"first":`...)
			b = strconv.AppendInt(b, f.First, 10)
			b = append(b, `,"last":`...)
			b = strconv.AppendInt(b, f.Last, 10)
			b = append(b, `,"error":`...)
			b = appendJSONString(b, f.Error)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if m.Journal != "" {
		b = append(b, `,"journal":`...)
		b = appendJSONString(b, m.Journal)
	}
	return append(b, '}')
}

// appendRan appends ran as JSON: [[first,last],...].
func appendRan(b []byte, ran [][2]int64) []byte {
	b = append(b, '[')
	for i, s := range ran {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, s[0], 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, s[1], 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// appendJSONString appends s as json.Marshal encodes a string. Plain
// printable ASCII (server ids, kinds, most errors) is copied as it is;
// anything json escapes goes through json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
