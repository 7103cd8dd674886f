package job

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/suggest"
	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/regcenter"
)

// File is a YAML file of job definitions, as read by Load and LoadFile:
//
//	regcenter:
//	  servers: [127.0.0.1:2181]
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
//
// The regcenter keys are the yaml names of regcenter.Config's fields; a job
// takes the keys of DecodeConfig plus handler. Keys are case-sensitive.
type File struct {
	// Regcenter is the registry center section, with environment overrides
	// and regcenter defaults applied, and validated.
	Regcenter regcenter.Config
	// Jobs are the jobs in file order, validated, with unique names. Their
	// Configs are as written: defaults are not filled in. Empty when the
	// file has no jobs key.
	Jobs []Spec
	// Tracing is the top-level tracing section as written, not decoded:
	// package jobfile decodes and checks it, and shardjob run acts on it.
	// Load only keeps it; nil when the file has none.
	Tracing *yaml.Node
}

// Spec is one job of a File: its Config and what runs it: a Go
// implementation bound by name (simple and dataflow jobs) or, for script
// and HTTP jobs, the section that describes the command or the request.
// The keys besides the Config's are handler, type, errorHandler and the
// section named after the type (script, http, dataflow); see spectype.go.
type Spec struct {
	Config
	// Handler names the registered Go implementation that runs the job.
	// "" means the one registered under the job's Name; see HandlerName.
	// Script and HTTP jobs have none.
	Handler string
	// Type is the job's type (key type): TypeSimple (also for ""),
	// TypeDataflow, TypeScript or TypeHTTP.
	Type Type
	// Section is the mapping under the key named after Type (script:,
	// http:, dataflow:), undecoded: the package of the type decodes it
	// (package jobfile for script and HTTP jobs). nil when absent.
	Section *yaml.Node
	// ErrorHandler is the value of the key errorHandler, undecoded: a
	// handler's name, or a mapping with its type and settings (package
	// errhandler). nil when absent.
	ErrorHandler *yaml.Node

	sectionKey string // the key Section came from
}

// HandlerName returns Handler, or Name when Handler is "".
func (s Spec) HandlerName() string {
	if s.Handler == "" {
		return s.Name
	}
	return s.Handler
}

// EnvPrefix prefixes the environment variables that override the regcenter
// section: SHARDJOB_REGCENTER_ followed by the upper-cased key, as in
// SHARDJOB_REGCENTER_SERVERS (ZooKeeper, comma-separated host:port list),
// SHARDJOB_REGCENTER_ETCD (etcd endpoints, the same way),
// SHARDJOB_REGCENTER_NAMESPACE, SHARDJOB_REGCENTER_SESSIONTIMEOUT ("10s"),
// SHARDJOB_REGCENTER_DIGEST or SHARDJOB_REGCENTER_TLSCAFILE. Empty
// variables are ignored. A variable naming one registry's servers replaces
// the other registry's servers in the file (SHARDJOB_REGCENTER_ETCD moves a
// file that names ZooKeeper servers to etcd); both variables set is an
// error.
const EnvPrefix = "SHARDJOB"

// LoadFile reads the file at path and loads it as Load does. Errors about
// the contents are prefixed with path.
func LoadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	data, err := readLimited(fh, MaxFileBytes)
	if cerr := fh.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("job: %w", cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := loadYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Load reads a YAML file of job definitions (see File) from r.
//
// The document is read through viper, so environment variables (see
// EnvPrefix) override the regcenter section; the regcenter section may be
// omitted when the environment provides the servers (ZooKeeper's, or
// etcd's). The section names one registry: servers (ZooKeeper) or etcd
// (the etcd endpoints), not both. Because viper folds
// keys to lower case, the document is first checked case-sensitively: any
// key not known at the top level (regcenter, jobs), in regcenter or in a
// job is rejected with ErrUnknownKey, naming where it is, its line and,
// for a near miss, the key probably meant:
//
//	jobs[0] "orders-sync": unknown key "shardingTotalcount" at line 7 (did you mean "shardingTotalCount"?)
//
// Bad values, invalid jobs (see Config.Validate), an invalid regcenter
// section (see regcenter.Config.Validate) and jobs sharing a name
// (ErrDuplicateJob) are errors too. Every problem is reported, in one
// error that joins them as errors.Join does (its Unwrap() []error returns
// them), whose entries each wrap ErrInvalidConfig and, where one applies,
// a specific sentinel; errors.Is matches any of them. On error the File is
// nil.
//
// A file larger than MaxFileBytes, nesting deeper than MaxYAMLDepth, with
// an alias or merge key that refers to itself, or whose aliases and merge
// keys expand beyond YAMLNodeBudget is refused before any of it is used
// (ErrConfigTooLarge, ErrConfigTooComplex).
func Load(r io.Reader) (*File, error) {
	data, err := readLimited(r, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	return loadYAML(data)
}

// readLimited reads r to its end, refusing more than limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("job: reading job definitions: %w", err)
	}
	if len(data) > limit {
		return nil, joinConfigErrors([]error{&configError{kind: ErrConfigTooLarge,
			subject: "file", detail: fmt.Sprintf("larger than the limit of %s bytes", groupDigits(limit))}})
	}
	return data, nil
}

func loadYAML(data []byte) (*File, error) {
	root, perr := parseYAMLDocument(context.Background(), data, MaxFileBytes)
	if perr != nil {
		return nil, joinConfigErrors([]error{perr})
	}

	var errs []error
	var rcNode, jobsNode, tracingNode *yaml.Node
	rcBroken := false
	if root != nil {
		if root.Kind != yaml.MappingNode {
			return nil, joinConfigErrors([]error{&configError{subject: "top level", line: root.Line,
				detail: "must be a mapping with the keys regcenter and jobs, got " + yamldoc.KindName(root)}})
		}
		pairs, perrs := mappingPairs(root)
		for _, e := range perrs {
			e.place = "top level"
			errs = append(errs, e)
		}
		for _, p := range pairs {
			switch p.Key {
			case "regcenter":
				rcNode = yamldoc.Resolve(p.Value)
			case "jobs":
				jobsNode = yamldoc.Resolve(p.Value)
			case "tracing":
				tracingNode = yamldoc.Resolve(p.Value)
				if tracingNode.Kind == yaml.ScalarNode && tracingNode.ShortTag() == "!!null" {
					// "tracing:" with nothing under it: at the key's line.
					tracingNode = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: p.KeyNode.Line, Column: p.KeyNode.Column}
				}
			default:
				errs = append(errs, unknownKeyError("top level", p, []string{"regcenter", "jobs", "tracing"}))
			}
		}
	}

	// The regcenter section: check its keys here, read its values through
	// viper so the environment can override them.
	rcFields := regcenterFields()
	rcLines := map[string]int{}
	if rcNode != nil && rcNode.ShortTag() != "!!null" {
		if rcNode.Kind != yaml.MappingNode {
			rcBroken = true
			errs = append(errs, &configError{place: "regcenter", subject: "regcenter", line: rcNode.Line,
				detail: "must be a mapping, got " + yamldoc.KindName(rcNode)})
		} else {
			known := make([]string, len(rcFields))
			for i, f := range rcFields {
				known[i] = f.key
			}
			pairs, perrs := mappingPairs(rcNode)
			for _, e := range perrs {
				e.place = "regcenter"
				errs = append(errs, e)
			}
			for _, p := range pairs {
				if _, ok := findRegcenterField(rcFields, p.Key); ok {
					rcLines[p.Key] = p.KeyNode.Line
				} else {
					errs = append(errs, unknownKeyError("regcenter", p, known))
				}
			}
		}
	}
	var rc regcenter.Config
	if !rcBroken {
		var rcErrs []error
		rc, rcErrs = loadRegcenter(data, rcFields, rcLines, len(errs) > 0)
		errs = append(errs, rcErrs...)
	}

	// The jobs.
	jobs := make([]Spec, 0)
	if jobsNode != nil && jobsNode.ShortTag() != "!!null" {
		if jobsNode.Kind != yaml.SequenceNode {
			errs = append(errs, &configError{place: "jobs", subject: "jobs", line: jobsNode.Line,
				detail: "must be a list of jobs, got " + yamldoc.KindName(jobsNode)})
		} else {
			type firstUse struct{ index, line int }
			names := map[string]firstUse{}
			for i, jn := range jobsNode.Content {
				placeOf := func(name string) string {
					if name == "" {
						return fmt.Sprintf("jobs[%d]", i)
					}
					return fmt.Sprintf("jobs[%d] %q", i, name)
				}
				var spec Spec
				errs = append(errs, spec.decodeNode(jn, placeOf)...)
				if spec.Name != "" {
					line := nameLine(jn)
					if first, dup := names[spec.Name]; dup {
						errs = append(errs, &configError{place: placeOf(spec.Name), key: "name", kind: ErrDuplicateJob,
							subject: fmt.Sprintf("name %q", spec.Name), line: line,
							detail: fmt.Sprintf("already used by jobs[%d] at line %d", first.index, first.line)})
					} else {
						names[spec.Name] = firstUse{i, line}
					}
				}
				jobs = append(jobs, spec)
			}
			if len(errs) == 0 {
				cfgs := make([]Config, len(jobs))
				index := map[string]int{}
				for i, sp := range jobs {
					cfgs[i], index[sp.Name] = sp.Config, i
				}
				errs = append(errs, dependencyProblems(cfgs, func(name string) string {
					return fmt.Sprintf("jobs[%d] %q", index[name], name)
				})...)
			}
		}
	}

	if len(errs) > 0 {
		return nil, joinConfigErrors(errs)
	}
	return &File{Regcenter: rc, Jobs: jobs, Tracing: tracingNode}, nil
}

// nameLine returns the line of a job mapping's name key, or of the mapping.
func nameLine(n *yaml.Node) int {
	n = yamldoc.Resolve(n)
	pairs, _ := mappingPairs(n)
	for _, p := range pairs {
		if p.Key == "name" {
			return p.KeyNode.Line
		}
	}
	return n.Line
}

// regcenterField is a field of regcenter.Config known by its yaml key.
type regcenterField struct {
	key   string // yaml key, e.g. "sessionTimeout"
	index []int  // field index in regcenter.Config
	env   string // overriding environment variable
}

// regcenterFields lists regcenter.Config's fields by their yaml tags, so a
// field added there is known here without change.
func regcenterFields() []regcenterField {
	t := reflect.TypeFor[regcenter.Config]()
	var fields []regcenterField
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(sf.Name)
		}
		fields = append(fields, regcenterField{
			key:   key,
			index: sf.Index,
			env:   EnvPrefix + "_REGCENTER_" + strings.ToUpper(key),
		})
	}
	return fields
}

func findRegcenterField(fields []regcenterField, key string) (regcenterField, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return regcenterField{}, false
}

// loadRegcenter reads the regcenter section of data through viper, with
// the environment overriding it, then applies defaults and validates.
// lines gives the line of each key present in the file. When the document
// already has problems, a viper read failure is not reported again.
func loadRegcenter(data []byte, fields []regcenterField, lines map[string]int, haveErrs bool) (regcenter.Config, []error) {
	var rc regcenter.Config
	v := viper.New()
	v.SetConfigType("yaml")
	for _, f := range fields {
		if err := v.BindEnv("regcenter."+strings.ToLower(f.key), f.env); err != nil {
			return rc, []error{&configError{place: "regcenter", subject: f.key, detail: err.Error(), cause: err}}
		}
	}
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		if haveErrs {
			return rc, nil
		}
		return rc, []error{&configError{subject: "invalid YAML", detail: err.Error(), cause: err}}
	}

	var errs []error
	rv := reflect.ValueOf(&rc).Elem()
	for _, f := range fields {
		raw := v.Get("regcenter." + strings.ToLower(f.key))
		if raw == nil {
			continue
		}
		if err := setRegcenterValue(rv.FieldByIndex(f.index), raw); err != nil {
			e := &configError{place: "regcenter", key: f.key, subject: f.key, detail: err.Error(), cause: err}
			if os.Getenv(f.env) != "" {
				e.hint = "from environment variable " + f.env
			} else {
				e.line = lines[f.key]
			}
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return rc, errs
	}

	// The environment may move the file to another registry: a variable
	// naming one registry (servers, etcd endpoints, an embedded member's
	// dir, a URL) replaces the file's naming of the others. Two such
	// variables set is refused below, by Validate.
	envServers := strings.TrimSpace(os.Getenv(EnvPrefix+"_REGCENTER_SERVERS")) != ""
	envEtcd := strings.TrimSpace(os.Getenv(EnvPrefix+"_REGCENTER_ETCD")) != ""
	envEmbedded := strings.TrimSpace(os.Getenv(EnvPrefix+"_REGCENTER_EMBEDDEDDIR")) != ""
	envURL := strings.TrimSpace(os.Getenv(EnvPrefix+"_REGCENTER_URL")) != ""
	named := 0
	for _, set := range []bool{envServers, envEtcd, envEmbedded, envURL} {
		if set {
			named++
		}
	}
	if named == 1 {
		if !envServers {
			rc.Servers = nil
		}
		if !envEtcd {
			rc.Etcd = nil
		}
		if !envEmbedded {
			rc.EmbeddedDir = ""
		}
		if !envURL {
			rc.URL = ""
		}
	}

	rc = rc.WithDefaults()
	if err := rc.Validate(); err != nil {
		e := &configError{subject: err.Error(), cause: err}
		switch {
		case len(rc.Servers) == 0 && len(rc.Etcd) == 0:
			e.hint = "set regcenter.servers (ZooKeeper) or regcenter.etcd (etcd) in the file, or " +
				EnvPrefix + "_REGCENTER_SERVERS or " + EnvPrefix + "_REGCENTER_ETCD in the environment"
		case len(rc.Servers) > 0 && len(rc.Etcd) > 0:
			e.hint = "regcenter.servers (ZooKeeper) and regcenter.etcd (etcd) name two registries; keep one"
			if envServers && envEtcd {
				e.hint = EnvPrefix + "_REGCENTER_SERVERS and " + EnvPrefix + "_REGCENTER_ETCD are both set; unset one"
			}
		}
		return rc, []error{e}
	}
	return rc, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// setRegcenterValue stores raw, a value from viper (decoded YAML or an
// environment string), into fv.
func setRegcenterValue(fv reflect.Value, raw any) error {
	if fv.Type() == durationType {
		switch x := raw.(type) {
		case string:
			d, err := time.ParseDuration(strings.TrimSpace(x))
			if err != nil {
				return fmt.Errorf(`%q is not a duration such as "10s"`, x)
			}
			fv.SetInt(int64(d))
			return nil
		case int:
			if x == 0 {
				fv.SetInt(0)
				return nil
			}
			return fmt.Errorf(`%d has no unit; write a duration such as "10s"`, x)
		default:
			return fmt.Errorf(`must be a duration such as "10s", got %s`, describeValue(raw))
		}
	}
	switch fv.Kind() {
	case reflect.String:
		s, ok := scalarText(raw)
		if !ok {
			return fmt.Errorf("must be a string, got %s", describeValue(raw))
		}
		fv.SetString(s)
	case reflect.Int, reflect.Int64, reflect.Int32:
		var n int64
		switch x := raw.(type) {
		case int:
			n = int64(x)
		case int64:
			n = x
		case string:
			var err error
			if n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 64); err != nil {
				return fmt.Errorf("%q is not an integer", x)
			}
		default:
			return fmt.Errorf("must be an integer, got %s", describeValue(raw))
		}
		if fv.OverflowInt(n) {
			return fmt.Errorf("%d is out of range", n)
		}
		fv.SetInt(n)
	case reflect.Bool:
		switch x := raw.(type) {
		case bool:
			fv.SetBool(x)
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return fmt.Errorf("%q is not true or false", x)
			}
			fv.SetBool(b)
		default:
			return fmt.Errorf("must be true or false, got %s", describeValue(raw))
		}
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported field type %s", fv.Type())
		}
		var list []string
		switch x := raw.(type) {
		case string: // from the environment: comma-separated
			for _, s := range strings.Split(x, ",") {
				if s = strings.TrimSpace(s); s != "" {
					list = append(list, s)
				}
			}
		case []any:
			for i, item := range x {
				s, ok := scalarText(item)
				if !ok {
					return fmt.Errorf("item %d must be a string, got %s", i, describeValue(item))
				}
				list = append(list, strings.TrimSpace(s))
			}
		default:
			return fmt.Errorf("must be a list of strings, got %s", describeValue(raw))
		}
		fv.Set(reflect.ValueOf(list).Convert(fv.Type()))
	default:
		return fmt.Errorf("unsupported field type %s", fv.Type())
	}
	return nil
}

// scalarText renders a decoded YAML scalar as text; false for nil, lists
// and mappings.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), true
	case time.Time:
		return x.Format(time.RFC3339Nano), true
	}
	return "", false
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "no value"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case string:
		return fmt.Sprintf("the string %q", x)
	default:
		return fmt.Sprint(x)
	}
}

// unknownKeyError reports p's key as unknown at place, suggesting the
// nearest of known when it is a near miss.
func unknownKeyError(place string, p yamldoc.Pair, known []string) *configError {
	e := &configError{place: place, key: p.Key, kind: ErrUnknownKey,
		subject: "unknown key " + quoteShort(p.Key), line: p.KeyNode.Line}
	if s := suggest.Nearest(p.Key, known); s != "" {
		e.suggestion = s
		e.hint = fmt.Sprintf("did you mean %q?", s)
	}
	return e
}
