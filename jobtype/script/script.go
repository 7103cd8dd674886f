// Package script runs a command for each sharding item of a job: a script
// job in ElasticJob's sense.
//
// The command is an argument list, started without a shell: an item's
// parameters reach it only as data (an environment variable and the last
// argument), never as text a shell would parse, so no parameter can inject
// a command. A shell is used only when the Config says so (Shell), and even
// then the command text is fixed by the Config and the sharding context is
// passed as the shell's positional parameter $1, never spliced into it.
//
// Each execution runs in a process group of its own. Its standard output
// and error go to the log, line by line, up to OutputLimit bytes; the end
// of its standard output is also the run's output (job.RecordOutput), kept
// by the history: the whole of it when it is one JSON value of at most
// job.MaxOutputSize bytes, else its last bytes as a JSON string. An exit
// code other than 0 is a failure ([ExitError]) carrying the code and the
// tail of standard error. When the item's context ends — shutdown, lost
// ownership, a timeout — the whole group gets SIGTERM and, GracePeriod
// later, SIGKILL; when the command's first process exits, whatever is left
// of its group is killed, so no process outlives its item.
//
// On Linux the command's first process also gets SIGKILL when the instance
// dies (the parent-death signal). Its children are not covered by that
// signal; for them, StateDir records every running process group (its id
// and the start time of its first process, from /proc), and [Reap], called
// at the next start of the same server before the scheduler starts, kills
// the groups a killed instance left behind and records their items as
// misfires so that they run again. The start time check makes sure that a
// process id the system has since given to another process is never
// signalled.
//
// The command does not inherit the instance's environment: it gets an
// allow-listed one (see Config.PassEnv), so that the registry center's
// credentials, the console's token and whatever else the instance was
// started with stay out of reach of the command and of everything it runs.
// When the item's context carries a span (job.WithTracerProvider), the
// command gets its W3C trace context in TRACEPARENT (and TRACESTATE), so
// that what it runs can continue the trace.
//
// The package works on Linux; [New] refuses on other systems.
package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/jobtype"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Defaults of Config.
const (
	// DefaultGracePeriod is the time between SIGTERM and SIGKILL when
	// GracePeriod is 0.
	DefaultGracePeriod = 5 * time.Second
	// DefaultOutputLimit is how many bytes of an execution's output are
	// logged when OutputLimit is 0.
	DefaultOutputLimit = 64 << 10
	// StderrTail is how many bytes of the end of standard error an
	// [ExitError] carries.
	StderrTail = 2 << 10
	// ContextEnv names the environment variable holding the sharding
	// context as JSON (see [jobtype.Context]).
	ContextEnv = "SHARDJOB_SHARDING_CONTEXT"
	// ReservedEnvPrefix starts the names of the instance's own settings
	// (SHARDJOB_REGCENTER_DIGEST, SHARDJOB_TOKEN, SHARDJOB_DISPATCH_TOKEN,
	// SHARDJOB_HISTORY_DSN, ...) and of ContextEnv. No variable of that
	// name reaches the command from the instance's environment, and Env
	// and PassEnv may not name one.
	ReservedEnvPrefix = "SHARDJOB_"
	// TraceParentEnv names the variable holding the W3C trace context's
	// traceparent of the item's span, set when the item's context carries
	// a span (see job.WithTracerProvider), so that the command's own spans
	// continue the trace. Without a span it is not set.
	TraceParentEnv = "TRACEPARENT"
	// TraceStateEnv names the variable holding the span's W3C tracestate,
	// set with TraceParentEnv when the trace state is not empty.
	TraceStateEnv = "TRACESTATE"
)

// DefaultEnv returns the names of the variables every command gets from
// the instance's environment when the instance has them, with every
// variable whose name starts with LC_: what programs need to be found
// (PATH), to know whose they run as and where its files go (HOME, USER,
// LOGNAME, SHELL, TMPDIR), and to read and write text and times as the
// instance does (LANG, LANGUAGE, TZ). TERM is not among them: the
// command's output goes to the log, not to a terminal.
func DefaultEnv() []string {
	return []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "LANGUAGE", "TZ"}
}

// defaultEnvPrefix is the prefix of the locale variables passed with
// DefaultEnv (LC_ALL, LC_CTYPE, ...).
const defaultEnvPrefix = "LC_"

// Sentinel errors.
var (
	// ErrInvalidConfig means a Config cannot be used; the error says why.
	ErrInvalidConfig = errors.New("script: invalid config")
	// ErrFailed is wrapped by every [ExitError]: the command ran and
	// failed.
	ErrFailed = errors.New("script: command failed")
	// ErrUnsupported means the system is not Linux.
	ErrUnsupported = errors.New("script: process groups and orphan cleanup need Linux")
)

// Config describes the command of a script job.
type Config struct {
	// Command is the program and its arguments, e.g.
	// ["/usr/local/bin/sync-orders", "--batch", "100"]. The program is
	// looked up in PATH when it has no slash. The sharding context's JSON
	// is appended as the last argument. Required.
	Command []string
	// Shell, when true, runs Command (then exactly one string) with
	// "/bin/sh -c"; the sharding context's JSON is the shell's $1. Use it
	// only for a command written by the operator: nothing from the
	// sharding context is ever part of the command text.
	Shell bool
	// Env holds "KEY=value" entries set in the command's environment, over
	// the variables it is passed (see PassEnv). A name starting with
	// ReservedEnvPrefix is refused.
	Env []string
	// PassEnv names the variables of the instance's environment that the
	// command gets besides DefaultEnv: a variable not listed in either is
	// not passed, and one listed but unset in the instance stays unset.
	// Names are written in full (no patterns). A name starting with
	// ReservedEnvPrefix is refused: those are the instance's own settings,
	// the registry center's digest and the console's and dispatcher's
	// tokens among them, and never reach a job.
	//
	// The command's environment is therefore: the DefaultEnv variables
	// (and LC_*) the instance has, the PassEnv variables it has, then Env,
	// then ContextEnv, then TraceParentEnv and TraceStateEnv when the
	// item's context carries a span.
	//
	// TraceParentEnv and TraceStateEnv are set by the scheduler alone:
	// Env and PassEnv may not name them, and the instance's own are never
	// passed.
	PassEnv []string
	// Dir is the working directory; "" is the instance's.
	Dir string
	// GracePeriod is how long the process group has between SIGTERM and
	// SIGKILL once the item's context ends. 0 means DefaultGracePeriod.
	GracePeriod time.Duration
	// OutputLimit caps the bytes of standard output and error logged per
	// execution; the rest is counted and dropped. 0 means
	// DefaultOutputLimit.
	OutputLimit int
	// StateDir is a directory private to this server id where running
	// process groups are recorded for [Reap]. "" records nothing: a
	// killed instance's grandchildren may then outlive it.
	StateDir string
	// Logger receives the command's output and its exits. nil means
	// slog.Default().
	Logger *slog.Logger
}

// Validate reports the first problem with c, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "":
		return fmt.Errorf("%w: command is empty", ErrInvalidConfig)
	case c.Shell && len(c.Command) != 1:
		return fmt.Errorf("%w: with shell: true the command must be one string, got %d", ErrInvalidConfig, len(c.Command))
	case c.GracePeriod < 0:
		return fmt.Errorf("%w: gracePeriod %v must not be negative", ErrInvalidConfig, c.GracePeriod)
	case c.OutputLimit < 0:
		return fmt.Errorf("%w: outputLimit %d must not be negative", ErrInvalidConfig, c.OutputLimit)
	}
	for _, e := range c.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: env entry %q is not KEY=value", ErrInvalidConfig, e)
		}
		if reserved(k) {
			return fmt.Errorf("%w: env sets %s: names starting with %s are the instance's own settings (credentials among them) and are not given to jobs",
				ErrInvalidConfig, k, ReservedEnvPrefix)
		}
		if traceVar(k) {
			return fmt.Errorf("%w: env sets %s: the scheduler sets it from the item's span when tracing is on", ErrInvalidConfig, k)
		}
	}
	for _, name := range c.PassEnv {
		if !validEnvName(name) {
			return fmt.Errorf("%w: passEnv %q is not a variable name (letters, digits and _, not starting with a digit)", ErrInvalidConfig, name)
		}
		if reserved(name) {
			return fmt.Errorf("%w: passEnv names %s: names starting with %s are the instance's own settings (credentials among them) and are never passed to jobs",
				ErrInvalidConfig, name, ReservedEnvPrefix)
		}
		if traceVar(name) {
			return fmt.Errorf("%w: passEnv names %s: the scheduler sets it from the item's span when tracing is on, never from the instance's environment",
				ErrInvalidConfig, name)
		}
	}
	return nil
}

// traceVar reports whether name is TraceParentEnv or TraceStateEnv, in
// any case (see reserved).
func traceVar(name string) bool {
	u := strings.ToUpper(name)
	return u == TraceParentEnv || u == TraceStateEnv
}

// traceEnv returns the TraceParentEnv and TraceStateEnv entries of the
// span ctx carries, or nothing when it carries none.
func traceEnv(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	var out []string
	if v := carrier.Get("traceparent"); v != "" {
		out = append(out, TraceParentEnv+"="+v)
	}
	if v := carrier.Get("tracestate"); v != "" {
		out = append(out, TraceStateEnv+"="+v)
	}
	return out
}

// reserved reports whether name is one of the instance's own variables.
// Linux's names are case-sensitive, but a name that differs only in case
// is refused too: it can only be a mistake or an attempt.
func reserved(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), ReservedEnvPrefix)
}

// validEnvName reports whether name is a portable variable name.
func validEnvName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Job runs its Config's command once per item. Create it with [New].
type Job struct {
	cfg   Config
	log   *slog.Logger
	state *stateDir
	pass  map[string]bool // DefaultEnv and PassEnv
}

// New validates cfg and returns its job. With a StateDir the directory is
// created if missing.
func New(cfg Config) (*Job, error) {
	if !supported {
		return nil, ErrUnsupported
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.GracePeriod == 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.OutputLimit == 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	cfg.Env = append([]string(nil), cfg.Env...)
	pass := map[string]bool{}
	for _, name := range append(DefaultEnv(), cfg.PassEnv...) {
		pass[name] = true
	}
	j := &Job{cfg: cfg, log: cfg.Logger, pass: pass}
	if cfg.StateDir != "" {
		st, err := openStateDir(cfg.StateDir)
		if err != nil {
			return nil, err
		}
		j.state = st
	}
	return j, nil
}

// ExitError is a command that ran and did not exit with code 0.
type ExitError struct {
	// Code is the exit code, or -1 when a signal ended the process.
	Code int
	// Signal is the signal that ended it, if one did.
	Signal syscall.Signal
	// Stderr is the end of its standard error, at most StderrTail bytes.
	Stderr string
}

// Error says how the command ended and ends with its stderr's tail.
func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Signal != 0 {
		fmt.Fprintf(&b, "script: command killed by %v", e.Signal)
	} else {
		fmt.Fprintf(&b, "script: command exited with code %d", e.Code)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

// Unwrap makes errors.Is match ErrFailed.
func (e *ExitError) Unwrap() error { return ErrFailed }

// Execute runs the command for sc's item and returns when its process
// group is gone: nil on exit code 0, an [ExitError] on another exit, or
// the context's cause (wrapped) when ctx ended first and the group was
// stopped.
func (j *Job) Execute(ctx context.Context, sc job.ShardingContext) error {
	sctx := jobtype.ContextOf(sc).JSON()
	var cmd *exec.Cmd
	if j.cfg.Shell {
		// $0 is the job's name, $1 the context: data, not command text.
		cmd = exec.Command("/bin/sh", "-c", j.cfg.Command[0], sc.JobName, sctx)
	} else {
		args := append(append([]string(nil), j.cfg.Command[1:]...), sctx)
		cmd = exec.Command(j.cfg.Command[0], args...)
	}
	cmd.Dir = j.cfg.Dir
	cmd.Env = append(append(append(j.environ(os.Environ()), j.cfg.Env...), ContextEnv+"="+sctx), traceEnv(ctx)...)
	cmd.SysProcAttr = sysProcAttr()
	// Bounds the wait for the output pipes once the group is killed: a
	// process that left the group could hold them open.
	cmd.WaitDelay = j.cfg.GracePeriod

	log := j.log.With("job", sc.JobName, "item", sc.Item, "task", sc.TaskID)
	out := newOutput(log, j.cfg.OutputLimit)
	cmd.Stdout = out.stream("stdout")
	cmd.Stderr = out.stream("stderr")

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("script: not started: %w", context.Cause(ctx))
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("script: starting %q: %w", j.cfg.Command[0], err)
	}
	pid := cmd.Process.Pid
	var rec *groupRecord
	if j.state != nil {
		r, err := j.state.record(pid, sc)
		if err != nil {
			// Unrecorded, the group could outlive a crash: do not run.
			kill(log, pid, syscall.SIGKILL)
			werr := cmd.Wait()
			return errors.Join(fmt.Errorf("script: recording the process group: %w", err), ignoreKilled(werr))
		}
		rec = r
	}

	exited := make(chan error, 1)
	go func() { exited <- waitExited(pid) }() // owned here: ends when the first process exits, which the kills below ensure
	var stopped error
	select {
	case err := <-exited:
		if err != nil {
			log.Warn("waiting for the command", "pid", pid, "err", err)
		}
	case <-ctx.Done():
		stopped = context.Cause(ctx)
		log.Info("stopping the command's process group", "pid", pid, "cause", stopped)
		kill(log, pid, syscall.SIGTERM)
		grace := time.NewTimer(j.cfg.GracePeriod)
		select {
		case <-exited:
			grace.Stop()
		case <-grace.C:
			log.Warn("command still running after the grace period; killing its process group", "pid", pid, "grace", j.cfg.GracePeriod)
			kill(log, pid, syscall.SIGKILL)
			<-exited
		}
	}
	// The first process has exited but is not reaped yet, so its pid still
	// names this group and no other: kill what is left of it.
	kill(log, pid, syscall.SIGKILL)
	if gone, err := waitGroupGone(pid, j.cfg.GracePeriod); err != nil || !gone {
		log.Error("the command's process group survived SIGKILL", "pgid", pid, "err", err)
	}
	werr := cmd.Wait()
	out.flush()
	out.record(ctx)
	if rec != nil {
		if err := j.state.remove(rec); err != nil {
			log.Warn("removing the process group's record", "err", err)
		}
	}
	if stopped != nil {
		return fmt.Errorf("script: stopped: %w", stopped)
	}
	if werr == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		xe := &ExitError{Code: ee.ExitCode(), Stderr: out.stderrTail()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			xe.Signal = ws.Signal()
		}
		return xe
	}
	if errors.Is(werr, exec.ErrWaitDelay) {
		log.Warn("a process outside the command's group kept its output open", "pid", pid)
		return nil
	}
	return fmt.Errorf("script: waiting for %q: %w", j.cfg.Command[0], werr)
}

// environ returns the entries of the instance's environment env that the
// command gets: those DefaultEnv, the LC_ prefix or PassEnv name, never a
// reserved one.
func (j *Job) environ(env []string) []string {
	var out []string
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if reserved(name) {
			continue
		}
		if j.pass[name] || strings.HasPrefix(name, defaultEnvPrefix) {
			out = append(out, e)
		}
	}
	return out
}

// kill signals the group pgid, logging a failure (there is nothing else
// to do about one: the wait that follows is bounded by WaitDelay).
func kill(log *slog.Logger, pgid int, sig syscall.Signal) {
	if err := killGroup(pgid, sig); err != nil {
		log.Error("cannot signal the command's process group", "pgid", pgid, "signal", sig, "err", err)
	}
}

// ignoreKilled drops the error of a process this package killed.
func ignoreKilled(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}
