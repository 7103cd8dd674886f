package httpjob

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/shardjob/shardjob/jobtype"
)

// The bounds of a body template. text/template cannot be interrupted
// while it runs, so a template is bounded twice: when the Config is
// validated (its parse tree: no range over more than MaxRangeIterations,
// no more than MaxRangeDepth ranges inside each other, no define, block or
// template), and while it renders, at validation and at every run alike
// (range iterations, the bytes functions make, the output and the time,
// each checked before the work it bounds is done).
const (
	// MaxBodyTemplate is the most bytes of Config.Body.
	MaxBodyTemplate = 64 << 10
	// MaxRenderedBody is the most bytes a body renders to, and the most
	// any one function call in it may make.
	MaxRenderedBody = 1 << 20
	// MaxRenderWork is the most bytes the function calls of one render may
	// make in all (print, printf, println, html, js, urlquery, json).
	MaxRenderWork = 8 << 20
	// MaxRangeIterations is the most iterations of all ranges of one
	// render together; a range over a larger integer literal is refused
	// when the Config is validated.
	MaxRangeIterations = 10_000
	// MaxRangeDepth is how many ranges may nest (a range in a range is 2).
	MaxRangeDepth = 2
	// MaxRenderTime is the most time one render may take.
	MaxRenderTime = 250 * time.Millisecond
	// MaxFormatWidth is the largest width or precision a printf verb may
	// give; a * width or precision (taken from an argument) is refused.
	MaxFormatWidth = 1024
)

// ErrTemplateBudget is wrapped by the error of a body template that goes
// over one of its bounds (MaxRangeIterations, MaxRenderedBody, ...); the
// error names the bound. At validation it comes wrapped with
// ErrInvalidConfig.
var ErrTemplateBudget = errors.New("httpjob: body template over its budget")

// The functions the rewritten parse tree calls: one after every pipeline
// (a check of the time budget) and one on every range's value (the
// iteration budget). They are added to a template only when it renders,
// so a body cannot name them.
const (
	tickFunc  = "shardjobTick"
	rangeFunc = "shardjobRange"
)

// parseBody parses a body template, refuses what the static bounds forbid
// and rewrites its tree so that rendering checks the dynamic ones. Errors
// name the field body.
func parseBody(text string) (*template.Template, error) {
	if len(text) > MaxBodyTemplate {
		return nil, fmt.Errorf("%w: body template is %d bytes, over the maximum of %d (MaxBodyTemplate)", ErrTemplateBudget, len(text), MaxBodyTemplate)
	}
	t, err := template.New("body").Funcs(Funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("body template: %w", err)
	}
	if len(t.Templates()) > 1 {
		return nil, fmt.Errorf("%w: body template: define and block are not allowed", ErrTemplateBudget)
	}
	if t.Tree == nil || t.Root == nil {
		return t, nil
	}
	if err := guard(t.Root, 0); err != nil {
		return nil, fmt.Errorf("%w: body template: %s", ErrTemplateBudget, err)
	}
	return t, nil
}

// guard walks n, refusing what the static bounds forbid, and appends the
// tick to every pipeline and the range check to every range's pipeline.
// depth is the number of ranges n is inside.
func guard(n parse.Node, depth int) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := guard(c, depth); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return guardPipe(n.Pipe, tickFunc)
	case *parse.IfNode:
		return guardBranch(&n.BranchNode, depth, tickFunc)
	case *parse.WithNode:
		return guardBranch(&n.BranchNode, depth, tickFunc)
	case *parse.RangeNode:
		if depth+1 > MaxRangeDepth {
			return fmt.Errorf("a range inside %d others: at most %d may nest (MaxRangeDepth)", depth, MaxRangeDepth)
		}
		if c := n.Pipe.Cmds; len(c) == 1 && len(c[0].Args) == 1 {
			if num, ok := c[0].Args[0].(*parse.NumberNode); ok && (!num.IsInt || num.Int64 > MaxRangeIterations) {
				return fmt.Errorf("range over %s: at most %d iterations (MaxRangeIterations)", num.Text, MaxRangeIterations)
			}
		}
		return guardBranch(&n.BranchNode, depth+1, rangeFunc)
	case *parse.TemplateNode:
		return fmt.Errorf("{{template %q}}: template and block are not allowed", n.Name)
	}
	return nil
}

func guardBranch(b *parse.BranchNode, depth int, check string) error {
	if err := guardPipe(b.Pipe, check); err != nil {
		return err
	}
	// The else of a range is outside its loop.
	elseDepth := depth
	if b.NodeType == parse.NodeRange {
		elseDepth--
	}
	if err := guard(b.List, depth); err != nil {
		return err
	}
	if b.ElseList != nil {
		return guard(b.ElseList, elseDepth)
	}
	return nil
}

// guardPipe appends a call of check to p and to the pipelines inside its
// commands' arguments (parenthesised ones): their value passes through.
func guardPipe(p *parse.PipeNode, check string) error {
	if p == nil {
		return nil
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			if sub, ok := a.(*parse.PipeNode); ok {
				if err := guardPipe(sub, tickFunc); err != nil {
					return err
				}
			}
		}
	}
	p.Cmds = append(p.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: p.Pos,
		Args: []parse.Node{parse.NewIdentifier(check).SetPos(p.Pos)}})
	return nil
}

// budget is what one render may still spend.
type budget struct {
	now      func() time.Time
	deadline time.Time
	work     int // bytes functions may still make
	iters    int // range iterations left
}

func newBudget(now func() time.Time) *budget {
	return &budget{now: now, deadline: now().Add(MaxRenderTime), work: MaxRenderWork, iters: MaxRangeIterations}
}

// tick fails once the render has taken longer than MaxRenderTime.
func (b *budget) tick() error {
	if b.now().After(b.deadline) {
		return fmt.Errorf("%w: rendering took longer than %v (MaxRenderTime)", ErrTemplateBudget, MaxRenderTime)
	}
	return nil
}

// charge takes n bytes, a function's result at most that long, from the
// work budget before the function makes them.
func (b *budget) charge(name string, n int) error {
	if err := b.tick(); err != nil {
		return err
	}
	if n > MaxRenderedBody {
		return fmt.Errorf("%w: %s could make %d bytes, over the maximum of %d (MaxRenderedBody)", ErrTemplateBudget, name, n, MaxRenderedBody)
	}
	if n > b.work {
		return fmt.Errorf("%w: the functions of one render make at most %d bytes (MaxRenderWork)", ErrTemplateBudget, MaxRenderWork)
	}
	b.work -= n
	return nil
}

// funcs are the functions a render calls: the guards the rewritten tree
// calls, and text/template's and Funcs' functions that make strings, each
// charged, before it runs, for the most it could make.
func (b *budget) funcs() template.FuncMap {
	return template.FuncMap{
		tickFunc: func(v any) (any, error) { return v, b.tick() },
		rangeFunc: func(v any) (any, error) {
			if err := b.tick(); err != nil {
				return nil, err
			}
			n := 1
			if rv := reflect.ValueOf(v); rv.CanInt() {
				n = int(max(0, min(rv.Int(), MaxRangeIterations+1)))
			} else if rv.CanUint() {
				n = int(min(rv.Uint(), MaxRangeIterations+1))
			}
			if n > b.iters {
				return nil, fmt.Errorf("%w: the ranges of one render run at most %d iterations (MaxRangeIterations)", ErrTemplateBudget, MaxRangeIterations)
			}
			b.iters -= n
			return v, nil
		},
		"print": func(args ...any) (string, error) {
			if err := b.charge("print", size(args)+len(args)); err != nil {
				return "", err
			}
			return fmt.Sprint(args...), nil
		},
		"println": func(args ...any) (string, error) {
			if err := b.charge("println", size(args)+len(args)+1); err != nil {
				return "", err
			}
			return fmt.Sprintln(args...), nil
		},
		"printf": func(format string, args ...any) (string, error) {
			n, err := printfSize(format, args)
			if err != nil {
				return "", fmt.Errorf("%w: printf %q: %v", ErrTemplateBudget, format, err)
			}
			if err := b.charge("printf", n); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"html":     b.escaper("html", template.HTMLEscaper),
		"js":       b.escaper("js", template.JSEscaper),
		"urlquery": b.escaper("urlquery", template.URLQueryEscaper),
		"json": func(v any) (string, error) {
			if err := b.charge("json", escapeFactor*size([]any{v})+512); err != nil {
				return "", err
			}
			data, err := json.Marshal(v)
			return string(data), err
		},
	}
}

// escapeFactor is the most bytes an escaper (html, js, urlquery, json)
// writes for one byte: js writes \u003C for <.
const escapeFactor = 6

func (b *budget) escaper(name string, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := b.charge(name, escapeFactor*(size(args)+len(args))); err != nil {
			return "", err
		}
		return f(args...), nil
	}
}

// size is how many bytes args print to: a string's length, or its printed
// form's for anything else (a number, a bool, the sharding context — the
// template's data, bounded by the job's config).
func size(args []any) int {
	n := 0
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += len(s)
		} else {
			n += len(fmt.Sprint(a))
		}
	}
	return n
}

// printfSize bounds what fmt.Sprintf(format, args...) writes: each verb
// at most its width or precision plus eight times the longest argument
// (%q, % #x) plus what a float verb may add, the format's own text, and
// every argument again for those no verb takes. A * width or precision and
// one over MaxFormatWidth are errors.
func printfSize(format string, args []any) (int, error) {
	verbs, width := 0, 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				return 0, errors.New("a * width or precision is not allowed")
			}
			if c >= '0' && c <= '9' {
				j := i
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					j++
				}
				w, err := strconv.Atoi(format[i:j])
				if err != nil || w > MaxFormatWidth {
					return 0, fmt.Errorf("width or precision %s is over %d (MaxFormatWidth)", format[i:j], MaxFormatWidth)
				}
				width = max(width, w)
				i = j - 1
				continue
			}
			if !strings.ContainsRune("+-# .[]", rune(c)) {
				break // the verb
			}
		}
		verbs++
	}
	longest := 0
	for _, a := range args {
		longest = max(longest, size([]any{a}))
	}
	return len(format) + verbs*(width+8*longest+400) + 8*size(args), nil
}

// render executes t with data within the budgets, into at most
// MaxRenderedBody bytes.
func render(t *template.Template, data templateData, now func() time.Time) ([]byte, error) {
	b := newBudget(now)
	c, err := t.Clone()
	if err != nil {
		return nil, err
	}
	w := &capWriter{b: b}
	if err := c.Funcs(b.funcs()).Execute(w, data); err != nil {
		return nil, err
	}
	// And once around the whole render, whatever its last check saw.
	if err := b.tick(); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// capWriter keeps what a render writes, up to MaxRenderedBody bytes, and
// checks the time budget at every write.
type capWriter struct {
	b   *budget
	buf bytes.Buffer
}

func (w *capWriter) Write(p []byte) (int, error) {
	if err := w.b.tick(); err != nil {
		return 0, err
	}
	if w.buf.Len()+len(p) > MaxRenderedBody {
		return 0, fmt.Errorf("%w: the body renders to more than %d bytes (MaxRenderedBody)", ErrTemplateBudget, MaxRenderedBody)
	}
	return w.buf.Write(p)
}

// templateData is what a body template sees: the sharding context's
// fields (as jobtype.Context has them), and JSON. It has no methods but
// those of FireTime below, which make a bounded string each, so every
// value a template can reach is bounded by the context.
type templateData struct {
	JobName            string   `json:"jobName"`
	TaskID             string   `json:"taskId"`
	ShardingTotalCount int      `json:"shardingTotalCount"`
	JobParameter       string   `json:"jobParameter"`
	ShardingItem       int      `json:"shardingItem"`
	ShardingParameter  string   `json:"shardingParameter"`
	ShardingKey        string   `json:"shardingKey,omitempty"`
	FireTime           fireTime `json:"fireTime"`
	Kind               string   `json:"kind"`
	ServerID           string   `json:"serverId"`
	// JSON is the whole context as JSON.
	JSON string
}

func newTemplateData(c jobtype.Context, cjson string) templateData {
	return templateData{JobName: c.JobName, TaskID: c.TaskID, ShardingTotalCount: c.ShardingTotalCount,
		JobParameter: c.JobParameter, ShardingItem: c.ShardingItem, ShardingParameter: c.ShardingParameter,
		ShardingKey: c.ShardingKey, FireTime: fireTime{c.FireTime}, Kind: c.Kind, ServerID: c.ServerID, JSON: cjson}
}

// maxTimeLayout is the longest layout .FireTime.Format takes.
const maxTimeLayout = 64

// fireTime is the fire time as a template sees it: printed and encoded as
// a time.Time, with a few of its methods. time.Time's own methods are not
// offered: Format with a long layout makes a string longer than the
// layout, over and over.
type fireTime struct{ t time.Time }

// String formats the time as time.Time does.
func (f fireTime) String() string { return f.t.String() }

// MarshalJSON encodes the time as time.Time does.
func (f fireTime) MarshalJSON() ([]byte, error) { return f.t.MarshalJSON() }

// Format formats the time with layout as time.Time does; the layout is at
// most 64 bytes.
func (f fireTime) Format(layout string) (string, error) {
	if len(layout) > maxTimeLayout {
		return "", fmt.Errorf("%w: a time layout of %d bytes, over %d", ErrTemplateBudget, len(layout), maxTimeLayout)
	}
	return f.t.Format(layout), nil
}

// Unix is the time in seconds since 1970 (UTC).
func (f fireTime) Unix() int64 { return f.t.Unix() }

// UnixMilli is the time in milliseconds since 1970 (UTC).
func (f fireTime) UnixMilli() int64 { return f.t.UnixMilli() }
