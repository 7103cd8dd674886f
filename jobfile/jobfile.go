// Package jobfile reads YAML files of job definitions and runs their
// jobs. [Load] and [LoadFile] read a [File]: its regcenter section (which
// the SHARDJOB_REGCENTER_* variables override, see [EnvPrefix]), its jobs
// ([Spec]: a job.Config and what runs it) and its tracing section
// ([Tracing]). [Add] and [Build] turn the jobs into running jobs: simple
// and dataflow jobs bound by name to Go implementations
// ([Options].Handlers), script and HTTP jobs built from their sections,
// each with its error handler. [Run] runs a whole file as a standalone
// instance; it is what `shardjob run jobs.yaml` does, so an operator can
// run script and HTTP jobs without writing Go.
//
// Package job reads none of this: a program that defines its jobs in Go
// does not link the file's reader.
//
// The sections of a job, each decoded strictly (an unknown key is an error naming
// it, its line and the key probably meant):
//
//	script:        # type: script (package jobtype/script)
//	  command: [/usr/local/bin/sync, --batch, "100"]   # or one string with shell: true
//	  shell: false
//	  env: {REGION: eu}           # set in the command's environment
//	  passEnv: [AWS_PROFILE]      # passed from the instance's, besides PATH, HOME, LANG, ...
//	  dir: /var/lib/sync
//	  gracePeriod: 10s
//	  outputLimit: 65536
//	http:          # type: http (package jobtype/httpjob)
//	  method: POST
//	  url: https://orders.internal/sync
//	  headers: {Content-Type: application/json}
//	  body: '{"city": {{json .ShardingParameter}}}'
//	  timeout: 30s
//	  contextHeader: Shardjob-Sharding-Context
//	  bodyExcerpt: 1024           # at most 65536
//	  allowPrivateAddresses: false   # true lets it call loopback, private and link-local addresses
//	dataflow:      # type: dataflow (package jobtype/dataflow)
//	  streaming: true
//	errorHandler: log            # or ignore, or a name registered with errhandler.Register
//	errorHandler: {type: stop, after: 3}
//	errorHandler: {type: webhook, url: https://hooks.example.com/jobs, secretEnv: HOOK_SECRET, retries: 3, timeout: 10s}
//	errorHandler: {type: webhook, preset: slack, url: https://hooks.slack.com/services/T/B/X}   # or preset: generic
//	alert: {late: 30s, notRunFor: 2h}   # alerts (job.AlertPolicy) reach the error handler too
//	items: {command: [/usr/local/bin/list-tenants, --active], timeout: 10s}   # items from data (job.ItemLister):
//	items: {url: https://tenants.internal/active}   # keys as a JSON array or one per line; allowPrivateAddresses as http's
//	errorHandler: {type: email, addr: "smtp.example.com:587", from: jobs@x.org, to: [ops@x.org], username: jobs, passwordEnv: SMTP_PASSWORD}
//	# a webhook or email handler calls only public addresses; allowPrivateAddresses: true in it lets it call
//	# loopback, private and link-local ones (hooks.internal, a receiver on this host)
package jobfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/errhandler"
	"github.com/shardjob/shardjob/internal/netpolicy"
	"github.com/shardjob/shardjob/internal/startstop"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype/httpjob"
	"github.com/shardjob/shardjob/jobtype/itemsource"
	"github.com/shardjob/shardjob/jobtype/script"
	"github.com/shardjob/shardjob/regcenter"
)

// ErrInvalidJob means a job's section or error handler cannot be used;
// the error names the job, the key and its line.
var ErrInvalidJob = errors.New("jobfile: invalid job")

// Options are what building jobs needs besides the file.
type Options struct {
	// Handlers are the Go implementations of simple and dataflow jobs, by
	// name (a job's handler key, or its name).
	Handlers map[string]job.Job
	// StateDir is where script jobs record their process groups (see
	// script.Config.StateDir); it must belong to this server id alone. ""
	// means DefaultStateDir for the file's namespace and the scheduler's
	// server id.
	StateDir string
	// Logger is for the jobs and their handlers; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultStateDir is the state directory of script jobs of one server in
// one namespace: under the system's temporary directory, which a reboot
// may clear — as a reboot ends every process a state directory records.
func DefaultStateDir(namespace, serverID string) string {
	return filepath.Join(os.TempDir(), "shardjob-"+strconv.Itoa(os.Getuid()), namespace, serverID)
}

// Streamer is implemented by dataflow jobs (dataflow.Job): a dataflow
// section's streaming key turns streaming on or off.
type Streamer interface {
	WithStreaming(on bool) job.Job
}

// Build returns the job that runs sp, wrapped in its error handler (by
// default errhandler.Log). sched is the scheduler the job will be added
// to: a stop error handler pauses the job through it (with nil, the pause
// fails with an error). A Go implementation (o.Handlers) of a job without
// an errorHandler key is returned as it is, to run as job.Scheduler.Add
// runs it (a job.RangeJob keeps its ranges; the scheduler logs its
// failures as any job's).
func Build(sp Spec, sched *job.Scheduler, o Options) (job.Job, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	var j job.Job
	var err error
	switch sp.TypeOrDefault() {
	case TypeScript:
		j, err = buildScript(sp, o.StateDir, log)
	case TypeHTTP:
		j, err = buildHTTP(sp, log)
	default:
		j, err = bind(sp, o.Handlers)
	}
	if err != nil {
		return nil, err
	}
	if !sp.Bound() || sp.ErrorHandler != nil {
		h, err := buildErrorHandler(sp, sched, log)
		if err != nil {
			return nil, err
		}
		j = errhandler.Wrap(j, h, errhandler.Options{})
	}
	if sp.Items == nil {
		return j, nil
	}
	src, err := buildItems(sp)
	if err != nil {
		return nil, err
	}
	return itemsource.With(j, src), nil
}

// buildItems builds the item source of sp's items: section: a command
// (a list of arguments, no shell) or a url, with a timeout.
func buildItems(sp Spec) (itemsource.Source, error) {
	s := &section{name: "items"}
	p := s.pairs(sp.Items, "command", "url", "timeout", "dir", "allowPrivateAddresses")
	var (
		argv    []string
		u, dir  string
		timeout time.Duration
		private bool
	)
	_, hasCmd := p["command"]
	_, hasURL := p["url"]
	switch {
	case hasCmd && hasURL:
		s.failf(sp.Items, "url", "and command are both given; an item source is one or the other")
	case !hasCmd && !hasURL:
		s.failf(sp.Items, "command", "or url is required: where the item keys come from")
	case hasCmd && p["command"][1].Kind != yaml.SequenceNode:
		s.failf(p["command"][0], "command", "must be a list of arguments such as [/usr/bin/list-tenants, --active] (no shell)")
	case hasCmd:
		s.list(p, "command", &argv)
	default:
		s.str(p, "url", &u)
	}
	s.duration(p, "timeout", &timeout)
	s.str(p, "dir", &dir)
	s.boolean(p, "allowPrivateAddresses", &private)
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	var src itemsource.Source
	var err error
	if hasCmd {
		src, err = itemsource.NewCommand(itemsource.Command{Argv: argv, Timeout: timeout, Dir: dir})
	} else {
		src, err = itemsource.NewURL(itemsource.URL{URL: u, Timeout: timeout, AllowPrivateAddresses: private})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: job %q: items: %w", ErrInvalidJob, sp.Name, err)
	}
	return src, nil
}

func invalid(sp Spec, s *section) error {
	if len(s.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: job %q: %s", ErrInvalidJob, sp.Name, strings.Join(s.errs, "; "))
}

func bind(sp Spec, handlers map[string]job.Job) (job.Job, error) {
	h, ok := handlers[sp.HandlerName()]
	if !ok {
		return nil, fmt.Errorf("%w: job %q wants Go handler %q, which is not registered", job.ErrUnknownHandler, sp.Name, sp.HandlerName())
	}
	if sp.TypeOrDefault() != TypeDataflow || sp.Section == nil {
		return h, nil
	}
	s := &section{name: "dataflow"}
	p := s.pairs(sp.Section, "streaming")
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	if _, set := p["streaming"]; !set {
		return h, nil
	}
	st, ok := h.(Streamer)
	if !ok {
		return nil, fmt.Errorf("%w: job %q: dataflow.streaming is set but handler %q is not a dataflow job", ErrInvalidJob, sp.Name, sp.HandlerName())
	}
	var on bool
	s.boolean(p, "streaming", &on)
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	return st.WithStreaming(on), nil
}

func buildScript(sp Spec, stateDir string, log *slog.Logger) (job.Job, error) {
	s := &section{name: "script"}
	p := s.pairs(sp.Section, "command", "shell", "env", "passEnv", "dir", "gracePeriod", "outputLimit")
	var c script.Config
	s.boolean(p, "shell", &c.Shell)
	if kv, ok := p["command"]; !ok {
		s.failf(sp.Section, "command", "is required: the program and its arguments, as a list")
	} else if kv[1].Kind == yaml.ScalarNode && !c.Shell {
		s.failf(kv[0], "command", "must be a list of arguments such as [/usr/bin/sync, --all] (a single string runs through /bin/sh only with shell: true)")
	} else if kv[1].Kind == yaml.ScalarNode {
		s.str(p, "command", new(string))
		c.Command = []string{kv[1].Value}
	} else {
		s.list(p, "command", &c.Command)
	}
	var env map[string]string
	s.strMap(p, "env", &env)
	for k, v := range env {
		c.Env = append(c.Env, k+"="+v)
	}
	s.list(p, "passEnv", &c.PassEnv)
	s.str(p, "dir", &c.Dir)
	s.duration(p, "gracePeriod", &c.GracePeriod)
	s.integer(p, "outputLimit", &c.OutputLimit)
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	c.StateDir = stateDir
	c.Logger = log
	j, err := script.New(c)
	if err != nil {
		return nil, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, sp.Name, err)
	}
	return j, nil
}

func buildHTTP(sp Spec, log *slog.Logger) (job.Job, error) {
	s := &section{name: "http"}
	p := s.pairs(sp.Section, "method", "url", "headers", "body", "timeout", "contextHeader", "bodyExcerpt", "allowPrivateAddresses")
	var c httpjob.Config
	s.str(p, "method", &c.Method)
	if !s.str(p, "url", &c.URL) {
		if _, given := p["url"]; !given {
			s.failf(sp.Section, "url", "is required")
		}
	}
	s.strMap(p, "headers", &c.Header)
	s.str(p, "body", &c.Body)
	s.duration(p, "timeout", &c.Timeout)
	s.str(p, "contextHeader", &c.ContextHeader)
	s.integer(p, "bodyExcerpt", &c.BodyExcerpt)
	s.boolean(p, "allowPrivateAddresses", &c.AllowPrivateAddresses)
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	c.Logger = log
	j, err := httpjob.New(c)
	if err != nil {
		return nil, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, sp.Name, err)
	}
	return j, nil
}

func buildErrorHandler(sp Spec, sched *job.Scheduler, log *slog.Logger) (errhandler.Handler, error) {
	n := sp.ErrorHandler
	if n == nil {
		return errhandler.Log{Logger: log}, nil
	}
	s := &section{name: "errorHandler"}
	name := n.Value
	var p map[string][2]*yaml.Node
	if n.Kind == yaml.MappingNode {
		// The type decides which other keys are known: find it first.
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "type" {
				name = deref(n.Content[i+1]).Value
			}
		}
		if name == "" {
			s.failf(n, "type", "is required: log, ignore, stop, webhook, email or a registered name")
			return nil, invalid(sp, s)
		}
	}
	keys := func(k ...string) {
		if n.Kind == yaml.MappingNode {
			p = s.pairs(n, append([]string{"type"}, k...)...)
		} else if len(k) > 0 {
			s.failf(n, name, "needs settings: write errorHandler: {type: %s, ...}", name)
		}
	}
	var h errhandler.Handler
	switch name {
	case "log":
		keys()
		h = errhandler.Log{Logger: log}
	case "ignore":
		keys()
		h = errhandler.Ignore{}
	case "stop", "throw":
		after := 3
		if n.Kind == yaml.MappingNode {
			p = s.pairs(n, "type", "after")
			s.integer(p, "after", &after)
		}
		if err := invalid(sp, s); err != nil {
			return nil, err
		}
		var p errhandler.Pauser = noScheduler{}
		if sched != nil {
			p = errhandler.SchedulerPauser(sched)
		}
		st, err := errhandler.NewStop(after, p, log)
		if err != nil {
			return nil, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, sp.Name, err)
		}
		h = st
	case "webhook":
		keys("url", "secret", "secretEnv", "retries", "timeout", "allowPrivateAddresses", "preset")
		var c errhandler.WebhookConfig
		var private bool
		if p != nil {
			s.str(p, "url", &c.URL)
			s.str(p, "preset", &c.Preset)
			s.secret(p, "secret", &c.Secret)
			s.integer(p, "retries", &c.Retries)
			s.duration(p, "timeout", &c.Timeout)
			s.boolean(p, "allowPrivateAddresses", &private)
		}
		if err := invalid(sp, s); err != nil {
			return nil, err
		}
		if !private {
			if u, err := url.Parse(c.URL); err == nil {
				if err := handlerAddress(sp, "url", u.Hostname()); err != nil {
					return nil, err
				}
			}
			c.Client = &http.Client{Transport: policedTransport()}
		}
		w, err := errhandler.NewWebhook(c)
		if err != nil {
			return nil, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, sp.Name, err)
		}
		h = w
	case "email":
		keys("addr", "from", "to", "username", "password", "passwordEnv", "subjectPrefix", "allowPrivateAddresses")
		var c errhandler.EmailConfig
		var private bool
		if p != nil {
			s.boolean(p, "allowPrivateAddresses", &private)
			s.str(p, "addr", &c.Addr)
			s.str(p, "from", &c.From)
			s.list(p, "to", &c.To)
			s.str(p, "username", &c.Username)
			s.secret(p, "password", &c.Password)
			s.str(p, "subjectPrefix", &c.SubjectPrefix)
		}
		if err := invalid(sp, s); err != nil {
			return nil, err
		}
		if !private {
			if host, _, err := net.SplitHostPort(c.Addr); err == nil {
				if err := handlerAddress(sp, "addr", host); err != nil {
					return nil, err
				}
			}
			c.Dial = policedDialer().DialContext
		}
		e, err := errhandler.NewEmail(c)
		if err != nil {
			return nil, fmt.Errorf("%w: job %q: %w", ErrInvalidJob, sp.Name, err)
		}
		h = e
	default:
		keys()
		r, err := errhandler.Lookup(name)
		if err != nil {
			return nil, fmt.Errorf("%w: job %q: errorHandler at line %d: %w", ErrInvalidJob, sp.Name, n.Line, err)
		}
		h = r
	}
	if err := invalid(sp, s); err != nil {
		return nil, err
	}
	return h, nil
}

// noScheduler stands in for the scheduler of a job built without one.
type noScheduler struct{}

func (noScheduler) Pause(context.Context, string) error {
	return errors.New("jobfile: the job was built without a scheduler to pause it with")
}

// Check builds every script and HTTP job of specs, and their error
// handlers, without side effects (no state directory is made), and
// reports every problem: what a command checks before it connects.
func Check(specs []Spec) error {
	var errs []error
	for _, sp := range specs {
		if sp.Bound() {
			if _, err := buildErrorHandler(sp, nil, slog.Default()); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if _, err := Build(sp, nil, Options{}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Add builds every job of specs (see Build) and adds it to sched: a
// simple or dataflow job bound to the Go implementation o.Handlers names
// (Spec.HandlerName; a missing one is job.ErrUnknownHandler), a script or
// HTTP job built from its section. Then, if any is a script job, it reaps
// what an earlier process of this server left in the state directory
// (script.Reap), owing those items a run. namespace is the file's
// (File.Regcenter.Namespace), for the default state directory. Call it
// before sched.Start. Every problem is reported; the jobs that could be
// added are added.
func Add(ctx context.Context, sched *job.Scheduler, specs []Spec, namespace string, o Options) error {
	defaulted := o.StateDir == ""
	if defaulted {
		o.StateDir = DefaultStateDir(namespace, sched.ServerID())
	}
	var errs []error
	scripts := false
	for _, sp := range specs {
		j, err := Build(sp, sched, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := sched.Add(ctx, sp.Config, j); err != nil {
			errs = append(errs, err)
			continue
		}
		scripts = scripts || sp.TypeOrDefault() == TypeScript
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if scripts {
		log := o.Logger
		if log == nil {
			log = slog.Default()
		}
		if _, err := script.Reap(ctx, o.StateDir, sched, log); err != nil {
			return err
		}
		if defaulted {
			// The default server id names the process (host@-@pid): an
			// earlier process of this host that was killed had another
			// id, and another state directory, which nothing else reads.
			parent := filepath.Dir(o.StateDir)
			for _, dir := range deadSiblings(parent, filepath.Base(o.StateDir), processAlive) {
				if _, err := script.Reap(ctx, filepath.Join(parent, dir), sched, log); err != nil {
					return err
				}
				_ = os.Remove(filepath.Join(parent, dir)) // reaped: empty, unless a record could not be settled
			}
		}
	}
	return nil
}

// deadSiblings lists the state directories in parent, beside self, of
// servers with a default id of self's host (host@-@pid) whose process is
// gone: alive says whether a pid names a live process.
func deadSiblings(parent, self string, alive func(pid int) bool) []string {
	host, _, ok := strings.Cut(self, "@-@")
	if !ok {
		return nil
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var dead []string
	for _, e := range ents {
		name := e.Name()
		h, p, ok := strings.Cut(name, "@-@")
		pid, err := strconv.Atoi(p)
		if !e.IsDir() || name == self || !ok || h != host || err != nil || pid <= 0 || alive(pid) {
			continue
		}
		dead = append(dead, name)
	}
	return dead
}

// processAlive reports whether pid names a process (one this user may not
// signal counts as alive).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RunOptions configure Run.
type RunOptions struct {
	Options
	// ServerID is this instance's server id; "" means job's default, one
	// per process (the host's address and pid, see [job.WithServerID]).
	// An id set here must not be live in another process.
	ServerID string
	// ShutdownTimeout bounds Shutdown once ctx ends; 0 means 30 s.
	ShutdownTimeout time.Duration
	// Started, if set, is called once the scheduler has started.
	Started func(*job.Scheduler)
	// Follow makes the instance run the jobs defined at run time in its
	// namespace too, besides the file's (see Follow): http definitions,
	// and script ones with FollowScripts.
	Follow bool
	// FollowScripts lets a following instance run script definitions
	// (FollowOptions.AllowScript): commands chosen by whoever can write a
	// definition, run on this host.
	FollowScripts bool
	// Stdout is where the stdout exporter writes spans; nil means
	// os.Stdout.
	Stdout io.Writer
	// Open, when set, connects to the registry in place of
	// [regcenter.Open], and bounds its own wait (Run gives it ctx as it
	// is): shardjob run shares an embedded member's Dir this way (package
	// embedded's Join), which this package does not link. nil:
	// regcenter.Open, within the config's ConnectTimeout.
	Open func(ctx context.Context, cfg regcenter.Config, opts ...regcenter.Option) (regcenter.Center, error)
}

// Run runs the jobs of f as one instance until ctx ends, then shuts down
// cleanly (running items finish, or are stopped at ShutdownTimeout) and
// closes its registry session. It connects to the registry f's regcenter
// section names (ZooKeeper, etcd, an embedded member or PostgreSQL),
// through [regcenter.Open] or o.Open, so the program must import that
// registry's package (regcenter/zookeeper, regcenter/etcd,
// regcenter/embedded, regcenter/postgres; `shardjob run` imports them
// all), which this package does not link.
//
// With f.Tracing (the file's tracing section) the scheduler gets a tracer
// provider of its own (see Tracing.NewTracerProvider) that traces the
// fires and item runs; it is shut down when Run returns, after the
// scheduler, waiting FlushTimeout at most for the last spans. Without it
// no span is made, whatever the environment says.
func Run(ctx context.Context, f *File, o RunOptions) (err error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
		o.Logger = log
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	opts := []job.Option{job.WithLogger(log)}
	if !f.Alert.IsZero() {
		opts = append(opts, job.WithAlertDefault(f.Alert))
	}
	if tr := f.Tracing; tr != nil {
		out := o.Stdout
		if out == nil {
			out = os.Stdout
		}
		tp, err := tr.NewTracerProvider(ctx, out)
		if err != nil {
			return err
		}
		// Registered first, so it runs last: after the scheduler's
		// Shutdown, which ends the last spans.
		defer func() {
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
			defer cancel()
			if terr := tp.Shutdown(fctx); terr != nil {
				// The jobs ran; spans the collector did not take are
				// lost, which is worth a warning, not a failed run.
				log.Warn("tracing: the last spans were not exported", "exporter", tr.Exporter, "err", terr)
			}
		}()
		opts = append(opts, job.WithTracerProvider(tp))
		log.Info("tracing on", "exporter", tr.Exporter, "endpoint", tr.Endpoint,
			"sampleRatio", tr.SampleRatio, "serviceName", tr.ServiceName)
	}
	var rc regcenter.Center
	if o.Open != nil {
		rc, err = o.Open(ctx, f.Regcenter, regcenter.WithLogger(log))
	} else {
		cctx, cancel := context.WithTimeout(ctx, f.Regcenter.ConnectTimeout+time.Second)
		rc, err = regcenter.Open(cctx, f.Regcenter, regcenter.WithLogger(log))
		cancel()
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rc.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if o.ServerID != "" {
		opts = append(opts, job.WithServerID(o.ServerID))
	}
	sched, err := job.NewScheduler(rc, opts...)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
		defer cancel()
		if serr := sched.Shutdown(sctx); serr != nil && err == nil {
			err = serr
		}
	}()
	if err := Add(ctx, sched, f.Jobs, f.Regcenter.Namespace, o.Options); err != nil {
		return err
	}
	if err := sched.Start(ctx); err != nil {
		return err
	}
	log.Info("running", "jobs", len(f.Jobs), "server", sched.ServerID(), "namespace", f.Regcenter.Namespace,
		"follow", o.Follow, "followScripts", o.Follow && o.FollowScripts)
	if o.Follow {
		var ferr error // Follow's, read once the group has stopped
		follow := startstop.New(ctx)
		if err := follow.Go(func(fctx context.Context) {
			ferr = Follow(fctx, sched, rc, FollowOptions{Options: o.Options, AllowScript: o.FollowScripts, Namespace: f.Regcenter.Namespace})
		}); err != nil {
			return err // a new group refuses nothing
		}
		defer func() { // before the scheduler shuts down
			// Follow returns once its context ends: no deadline, and a
			// Wait on a context that never ends returns nil.
			if serr := follow.Stop(context.Background()); serr != nil && err == nil {
				err = serr
			}
			if ferr != nil && err == nil {
				err = ferr
			}
		}()
	}
	if o.Started != nil {
		o.Started(sched)
	}
	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx))
	return nil
}

// ErrAddress is wrapped by an error handler's refusal of an address the
// address policy forbids: loopback, private, link-local and the like (see
// allowPrivateAddresses), at build time for a literal address and at
// delivery for a name that resolves to one. A job file's webhook and
// email handlers, and those of definitions posted at run time, call only
// public addresses unless their section sets allowPrivateAddresses, as a
// job's http: section does.
var ErrAddress = errors.New("jobfile: address not allowed")

// handlerAddress checks an error handler's host against the address
// policy.
func handlerAddress(sp Spec, key, host string) error {
	if why := netpolicy.HostWhy(host); why != "" {
		return fmt.Errorf("%w: job %q: errorHandler %s %q: %w: %s; set allowPrivateAddresses: true in the errorHandler to allow it",
			ErrInvalidJob, sp.Name, key, host, ErrAddress, why)
	}
	return nil
}

// policedDialer dials only addresses the policy allows, checked after
// name resolution.
func policedDialer() *net.Dialer { return netpolicy.Dialer(errorHandlerAddress) }

// policedTransport is an error handler webhook's transport under the
// address policy (netpolicy.Transport).
func policedTransport() *http.Transport { return netpolicy.Transport(errorHandlerAddress) }

// errorHandlerAddress wraps the policy's refusal of an error handler's
// address.
func errorHandlerAddress(err error) error {
	return fmt.Errorf("%w: the host %v; set allowPrivateAddresses: true in the errorHandler to allow it", ErrAddress, err)
}
