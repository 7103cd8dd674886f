// Package itemsource gives a job items read from data (job.ItemLister)
// from outside the program: a command's output or an HTTP endpoint's
// response, as a job file's items: section names them.
//
// Either returns the keys as a JSON array of strings, or as text with one
// key per line (surrounding whitespace trimmed, blank lines skipped). A
// list longer than MaxOutput bytes, a command that exits non-zero or a
// response that is not 200 is an error: the scheduler keeps the last
// list in force and says why.
package itemsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/shardjob/shardjob/internal/netpolicy"
	"github.com/shardjob/shardjob/job"
)

// Limits and defaults.
const (
	// MaxOutput is the most bytes of a list read.
	MaxOutput = 1 << 20
	// DefaultTimeout bounds a read when its Timeout is 0; a Timeout may
	// be at most job.ItemListTimeout.
	DefaultTimeout = 10 * time.Second
)

// Errors of a source.
var (
	// ErrInvalidConfig: a Command or URL that cannot be used.
	ErrInvalidConfig = errors.New("itemsource: invalid config")
	// ErrTooLarge: the list read is over MaxOutput bytes.
	ErrTooLarge = errors.New("itemsource: list too large")
	// ErrAddress: the URL's host is, or resolves to, an address the
	// policy refuses (loopback, private, link-local; see
	// URL.AllowPrivateAddresses).
	ErrAddress = errors.New("itemsource: address not allowed")
)

// Source lists the keys.
type Source interface {
	List(ctx context.Context) ([]string, error)
}

// Command runs a program and reads the keys from its standard output.
type Command struct {
	// Argv is the program and its arguments; no shell is involved.
	Argv []string
	// Timeout bounds a run (0: DefaultTimeout); the program is killed at
	// it.
	Timeout time.Duration
	// Dir is the working directory ("": the process's).
	Dir string
}

// NewCommand checks c and fills in its defaults.
func NewCommand(c Command) (*Command, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return nil, fmt.Errorf("%w: command is empty", ErrInvalidConfig)
	}
	t, err := timeout(c.Timeout)
	if err != nil {
		return nil, err
	}
	c.Timeout = t
	return &c, nil
}

func timeout(t time.Duration) (time.Duration, error) {
	switch {
	case t < 0 || t > job.ItemListTimeout:
		return 0, fmt.Errorf("%w: timeout %v must be between 0 and %v", ErrInvalidConfig, t, job.ItemListTimeout)
	case t == 0:
		return DefaultTimeout, nil
	}
	return t, nil
}

// List runs the command and parses its output.
func (c *Command) List(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.WaitDelay = time.Second
	out := &capped{max: MaxOutput}
	var stderr capped
	stderr.max = 4 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("%w: %s printed more than %d bytes", ErrTooLarge, c.Argv[0], MaxOutput)
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.buf.String()); msg != "" {
			return nil, fmt.Errorf("itemsource: %s: %w: %s", c.Argv[0], err, msg)
		}
		return nil, fmt.Errorf("itemsource: %s: %w", c.Argv[0], err)
	}
	return Parse(out.buf.Bytes())
}

// capped keeps at most max bytes written to it and notes more.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// URL gets the keys from an HTTP endpoint.
type URL struct {
	// URL is the endpoint, http or https.
	URL string
	// Timeout bounds a request (0: DefaultTimeout).
	Timeout time.Duration
	// AllowPrivateAddresses allows a host that is, or resolves to, a
	// loopback, private or link-local address; refused by default.
	AllowPrivateAddresses bool
	client                *http.Client
}

// NewURL checks u and fills in its defaults.
func NewURL(u URL) (*URL, error) {
	p, err := url.Parse(u.URL)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("%w: url %q must be an http or https URL with a host", ErrInvalidConfig, u.URL)
	}
	if u.Timeout, err = timeout(u.Timeout); err != nil {
		return nil, err
	}
	if !u.AllowPrivateAddresses {
		if why := netpolicy.HostWhy(p.Hostname()); why != "" {
			return nil, fmt.Errorf("%w: url %q: %w: %s; set allowPrivateAddresses to allow it", ErrInvalidConfig, u.URL, ErrAddress, why)
		}
		u.client = &http.Client{Transport: policed()}
	} else {
		u.client = &http.Client{}
	}
	return &u, nil
}

// policed is the transport under the address policy (netpolicy.Transport),
// shared by the sources that use it.
var policed = sync.OnceValue(func() *http.Transport {
	return netpolicy.Transport(func(err error) error {
		return fmt.Errorf("%w: the host %v; set allowPrivateAddresses to allow it", ErrAddress, err)
	})
})

// List sends a GET and parses the response.
func (u *URL) List(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, u.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("itemsource: %w", err)
	}
	req.Header.Set("Accept", "application/json, text/plain")
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("itemsource: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput+1))
	if err != nil {
		return nil, fmt.Errorf("itemsource: reading %s: %w", u.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("itemsource: GET %s: %s", u.URL, resp.Status)
	}
	if len(body) > MaxOutput {
		return nil, fmt.Errorf("%w: GET %s answered more than %d bytes", ErrTooLarge, u.URL, MaxOutput)
	}
	return Parse(body)
}

// Parse reads a list: a JSON array of strings, or one key per line.
func Parse(data []byte) ([]string, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		var keys []string
		if err := json.Unmarshal(t, &keys); err != nil {
			return nil, fmt.Errorf("itemsource: the list is not a JSON array of strings: %w", err)
		}
		return keys, nil
	}
	var keys []string
	for line := range strings.Lines(string(data)) {
		if k := strings.TrimSpace(line); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// With returns j with src as its item source: a job.ItemLister that runs
// as j does (a job.RangeJob keeps its ranges).
func With(j job.Job, src Source) job.ItemLister {
	if rj, ok := j.(job.RangeJob); ok {
		return listedRange{listed{j, src}, rj}
	}
	return listed{j, src}
}

type listed struct {
	job.Job
	src Source
}

func (l listed) ListItems(ctx context.Context) ([]string, error) { return l.src.List(ctx) }

type listedRange struct {
	listed
	rj job.RangeJob
}

func (l listedRange) ExecuteRange(ctx context.Context, rc job.RangeContext) error {
	return l.rj.ExecuteRange(ctx, rc)
}
