package jobfile

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// MaxFileBytes is the largest job file Load and LoadFile read. Its other
// limits are those of the config document (job.MaxYAMLDepth,
// job.YAMLNodeBudget).
const MaxFileBytes = 64 << 20

// File is a YAML file of job definitions, as read by Load and LoadFile:
//
//	regcenter:
//	  servers: [127.0.0.1:2181]     # ZooKeeper; or etcd: [...], embeddedDir: DIR, postgres: postgres://...
//	  namespace: shop
//	  sessionTimeout: 10s
//	  digestFile: /etc/shardjob/digest   # one line, user:password
//	jobs:
//	  - name: orders-sync
//	    handler: orders
//	    cron: "*/5 * * * * *"
//	    shardingTotalCount: 4
//	    shardingItemParameters: "0=Beijing,1=Shanghai,2=Guangzhou,3=Shenzhen"
//	    failover: true
//	tracing:                        # only for an instance that runs the file (Run)
//	  exporter: otlp
//
// The regcenter keys are the yaml names of regcenter.Config's fields, and
// postgres (a postgres:// URL, as url); a job takes the keys of
// job.DecodeConfig plus those of Spec. Keys are case-sensitive.
//
// One File serves both ways of running jobs: a Go program that binds its
// jobs to its own implementations (Add with Options.Handlers), and an
// instance that runs script and HTTP jobs without Go code (Run, and
// `shardjob run`). Its jobs' configs are decoded by package job, with the
// decoder of the config document stored in the registry, so a job reads
// the same in the file and in the registry.
type File struct {
	// Regcenter is the registry center section, with environment overrides
	// (see EnvPrefix) and regcenter defaults applied, and validated.
	Regcenter regcenter.Config
	// Jobs are the jobs in file order, validated, with unique names. Their
	// Configs are as written: defaults are not filled in. Empty when the
	// file has no jobs key.
	Jobs []Spec
	// Tracing is the tracing section (see Tracing); nil when the file has
	// none, and then an instance that runs the file makes no span.
	Tracing *Tracing
	// Alert is the top-level alert: section, {late, notRunFor}: the
	// namespace default an instance running the file (Run) gives its jobs
	// that set no alert (job.WithAlertDefault); zero when absent.
	Alert job.AlertPolicy
}

// LoadFile reads the file at path and loads it as Load does. Errors about
// the contents are prefixed with path.
func LoadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jobfile: %w", err)
	}
	data, err := readLimited(fh, MaxFileBytes)
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("jobfile: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := load(data, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Load reads a YAML file of job definitions (see File) from r.
//
// Environment variables (see EnvPrefix) override the regcenter section;
// the section may be omitted when the environment names the registry.
// The section names one registry: servers (ZooKeeper), etcd (the etcd
// endpoints), embeddedDir (an embedded etcd member's directory) or
// postgres (a postgres:// URL; url is the same key under its general
// name), not two.
//
// Decoding is strict and case-sensitive: any key not known at the top
// level (regcenter, jobs, tracing), in regcenter, in a job or in its
// sections is rejected with job.ErrUnknownKey, naming where it is, its
// line and, for a near miss, the key probably meant:
//
//	jobs[0] "orders-sync": unknown key "shardingTotalcount" at line 7 (did you mean "shardingTotalCount"?)
//
// Bad values, invalid jobs (see job.Config.Validate), an invalid regcenter
// section (see regcenter.Config.Validate), jobs sharing a name
// (job.ErrDuplicateJob), dependencies that cannot be met
// (job.CheckDependencies) and a bad tracing section (ErrInvalidTracing)
// are errors too. Every problem is reported, in one error that joins them
// as errors.Join does (its Unwrap() []error returns them), whose entries
// each wrap job.ErrInvalidConfig and, where one applies, a specific
// sentinel; errors.Is matches any of them. On error the File is nil.
//
// A file larger than MaxFileBytes, nesting deeper than job.MaxYAMLDepth,
// with an alias or merge key that refers to itself, or whose aliases and
// merge keys expand beyond job.YAMLNodeBudget is refused before any of it
// is used (job.ErrConfigTooLarge, job.ErrConfigTooComplex).
//
// The script: and http: sections and the error handlers are decoded when
// the jobs are built (Build, Check, Add, Run).
func Load(r io.Reader) (*File, error) {
	data, err := readLimited(r, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return load(data, os.Getenv)
}

// readLimited reads r to its end, refusing more than limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("jobfile: reading job definitions: %w", err)
	}
	if len(data) > limit {
		return nil, join([]error{&problem{kinds: []error{job.ErrConfigTooLarge},
			subject: "file", detail: fmt.Sprintf("larger than the limit of %s bytes", yamldoc.GroupDigits(limit))}})
	}
	return data, nil
}

// topKeys are the keys of a file's top level.
var topKeys = []string{"regcenter", "jobs", "tracing", "alert"}

// load decodes a file, reading the environment with getenv.
func load(data []byte, getenv func(string) string) (*File, error) {
	root, perr := yamldoc.Parse(context.Background(), data,
		yamldoc.Limits{Bytes: MaxFileBytes, Depth: job.MaxYAMLDepth, Budget: job.YAMLNodeBudget})
	if perr != nil {
		return nil, join([]error{docProblem("", perr)})
	}

	var errs []error
	var rcNode, jobsNode, tracingNode, alertNode *yaml.Node
	if root != nil {
		if root.Kind != yaml.MappingNode {
			return nil, join([]error{&problem{subject: "top level", line: root.Line,
				detail: "must be a mapping with the keys regcenter and jobs, got " + yamldoc.KindName(root)}})
		}
		pairs, perrs := yamldoc.Pairs(root, job.MaxYAMLDepth)
		for _, e := range perrs {
			errs = append(errs, docProblem("top level", e))
		}
		for _, p := range pairs {
			switch p.Key {
			case "regcenter":
				rcNode = yamldoc.Resolve(p.Value)
			case "jobs":
				jobsNode = yamldoc.Resolve(p.Value)
			case "tracing":
				tracingNode = yamldoc.Resolve(p.Value)
				if yamldoc.IsNull(tracingNode) {
					// "tracing:" with nothing under it: at the key's line.
					tracingNode = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: p.KeyNode.Line, Column: p.KeyNode.Column}
				}
			case "alert":
				alertNode = yamldoc.Resolve(p.Value)
			default:
				errs = append(errs, unknownKey("top level", p, topKeys))
			}
		}
	}

	rc, rcErrs := loadRegcenter(rcNode, getenv)
	errs = append(errs, rcErrs...)
	jobs, jobErrs := loadJobs(jobsNode, len(errs) == 0)
	errs = append(errs, jobErrs...)
	var tr *Tracing
	if tracingNode != nil {
		var terrs []error
		tr, terrs = decodeTracing(tracingNode)
		errs = append(errs, terrs...)
	}
	var alert job.AlertPolicy
	if alertNode != nil && !yamldoc.IsNull(alertNode) {
		var aerrs []error
		alert, aerrs = decodeAlertDefault(alertNode)
		errs = append(errs, aerrs...)
	}
	if len(errs) > 0 {
		return nil, join(errs)
	}
	return &File{Regcenter: rc, Jobs: jobs, Tracing: tr, Alert: alert}, nil
}

// loadJobs decodes the jobs section n (nil when absent). The dependencies
// between the jobs are checked when dependencies is true: when the file
// has no other problem so far.
func loadJobs(n *yaml.Node, dependencies bool) ([]Spec, []error) {
	jobs := make([]Spec, 0)
	if yamldoc.IsNull(n) {
		return jobs, nil
	}
	if n.Kind != yaml.SequenceNode {
		return jobs, []error{&problem{place: "jobs", subject: "jobs", line: n.Line,
			detail: "must be a list of jobs, got " + yamldoc.KindName(n)}}
	}
	var errs []error
	type firstUse struct{ index, line int }
	names := map[string]firstUse{}
	for i, jn := range n.Content {
		placeOf := func(name string) string {
			if name == "" {
				return fmt.Sprintf("jobs[%d]", i)
			}
			return fmt.Sprintf("jobs[%d] %s", i, yamldoc.QuoteShort(name))
		}
		var spec Spec
		errs = append(errs, spec.decode(jn, placeOf)...)
		if name := nameOf(jn); name != "" {
			line := nameLine(jn)
			if first, dup := names[name]; dup {
				errs = append(errs, &problem{place: placeOf(name), kinds: []error{job.ErrDuplicateJob},
					subject: "name " + yamldoc.QuoteShort(name), line: line,
					detail: fmt.Sprintf("already used by jobs[%d] at line %d", first.index, first.line)})
			} else {
				names[name] = firstUse{i, line}
			}
		}
		jobs = append(jobs, spec)
	}
	if dependencies && len(errs) == 0 {
		cfgs := make([]job.Config, len(jobs))
		index := map[string]int{}
		for i, sp := range jobs {
			cfgs[i], index[sp.Name] = sp.Config, i
		}
		if err := job.CheckDependencies(cfgs, func(name string) string {
			return fmt.Sprintf("jobs[%d] %s", index[name], yamldoc.QuoteShort(name))
		}); err != nil {
			errs = append(errs, entries(err)...)
		}
	}
	return jobs, errs
}

// nameLine returns the line of a job mapping's name key, or of the mapping.
func nameLine(n *yaml.Node) int {
	if p, ok := pair(n, "name"); ok {
		return p.KeyNode.Line
	}
	return yamldoc.Resolve(n).Line
}

// decodeAlertDefault decodes the top-level alert: section and checks it as
// job.WithAlertDefault does.
func decodeAlertDefault(n *yaml.Node) (job.AlertPolicy, []error) {
	s := &section{name: "alert"}
	var a job.AlertPolicy
	if n.Kind != yaml.MappingNode {
		s.errs = append(s.errs, fmt.Sprintf("alert at line %d: must be a mapping with late and notRunFor, the default of the jobs that set none", n.Line))
	} else {
		p := s.pairs(n, "late", "notRunFor")
		s.duration(p, "late", &a.Late)
		s.duration(p, "notRunFor", &a.NotRunFor)
		if len(s.errs) == 0 {
			if err := a.Validate(); err != nil {
				s.errs = append(s.errs, fmt.Sprintf("alert at line %d: %v", n.Line, err))
			}
		}
	}
	errs := make([]error, len(s.errs))
	for i, m := range s.errs {
		errs[i] = fmt.Errorf("%w: %s", job.ErrInvalidConfig, m)
	}
	return a, errs
}
