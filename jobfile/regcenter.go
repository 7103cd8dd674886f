package jobfile

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
	"github.com/shardjob/shardjob/regcenter"
)

// EnvPrefix prefixes the environment variables that override the regcenter
// section of a File: SHARDJOB_REGCENTER_ followed by the upper-cased key,
// as in SHARDJOB_REGCENTER_SERVERS (ZooKeeper, comma-separated host:port
// list), SHARDJOB_REGCENTER_ETCD (etcd endpoints, the same way),
// SHARDJOB_REGCENTER_EMBEDDEDDIR, SHARDJOB_REGCENTER_URL,
// SHARDJOB_REGCENTER_NAMESPACE, SHARDJOB_REGCENTER_SESSIONTIMEOUT
// ("10s"), SHARDJOB_REGCENTER_DIGEST or SHARDJOB_REGCENTER_TLSCAFILE;
// SHARDJOB_REGCENTER_PG gives the postgres key (a postgres:// URL, as
// SHARDJOB_REGCENTER_URL does). Empty variables are ignored.
//
// A variable naming one registry (SERVERS, ETCD, EMBEDDEDDIR, URL or PG)
// replaces the file's naming of the others: SHARDJOB_REGCENTER_ETCD moves
// a file that names ZooKeeper servers to etcd, SHARDJOB_REGCENTER_PG one
// that names etcd to PostgreSQL. Two of them set is an error naming both.
const EnvPrefix = "SHARDJOB"

// regcenterKey is a key of the regcenter section: a field of
// regcenter.Config, by its yaml name.
type regcenterKey struct {
	key   string // yaml key, e.g. "sessionTimeout"
	field int    // field index in regcenter.Config
	env   string // overriding environment variable
}

// regcenterKeys lists regcenter.Config's fields by their yaml tags, so a
// field added there is known here without change, and postgres, which
// sets URL as url does.
var regcenterKeys = func() []regcenterKey {
	t := reflect.TypeFor[regcenter.Config]()
	var keys []regcenterKey
	for i := range t.NumField() {
		sf := t.Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(sf.Name)
		}
		keys = append(keys, regcenterKey{key: key, field: i, env: EnvPrefix + "_REGCENTER_" + strings.ToUpper(key)})
		if key == "url" {
			keys = append(keys, regcenterKey{key: "postgres", field: i, env: EnvPrefix + "_REGCENTER_PG"})
		}
	}
	return keys
}()

// registryVars are the variables that each name the registry.
var registryVars = []string{
	EnvPrefix + "_REGCENTER_SERVERS", EnvPrefix + "_REGCENTER_ETCD", EnvPrefix + "_REGCENTER_EMBEDDEDDIR",
	EnvPrefix + "_REGCENTER_URL", EnvPrefix + "_REGCENTER_PG",
}

// loadRegcenter decodes the regcenter section n (nil when absent), with
// the environment (read with getenv; a variable of blanks is not set)
// overriding it, then applies defaults and validates.
func loadRegcenter(n *yaml.Node, getenv func(string) string) (regcenter.Config, []error) {
	var rc regcenter.Config
	var errs []error
	file := map[string]yamldoc.Pair{} // the section's known keys that have a value
	if !yamldoc.IsNull(n) {
		if n.Kind != yaml.MappingNode {
			return rc, []error{&problem{place: "regcenter", subject: "regcenter", line: n.Line,
				detail: "must be a mapping, got " + yamldoc.KindName(n)}}
		}
		known := make([]string, len(regcenterKeys))
		for i, k := range regcenterKeys {
			known[i] = k.key
		}
		pairs, perrs := yamldoc.Pairs(n, job.MaxYAMLDepth)
		for _, e := range perrs {
			errs = append(errs, docProblem("regcenter", e))
		}
		for _, p := range pairs {
			if !slices.ContainsFunc(regcenterKeys, func(k regcenterKey) bool { return k.key == p.Key }) {
				errs = append(errs, unknownKey("regcenter", p, known))
			} else if !yamldoc.IsNull(p.Value) {
				file[p.Key] = p
			}
		}
	}

	// Each field from the environment, or else from the file.
	rv := reflect.ValueOf(&rc).Elem()
	bad := false
	fromEnv := map[int]bool{}
	for _, k := range regcenterKeys {
		raw := getenv(k.env)
		if strings.TrimSpace(raw) == "" {
			continue
		}
		fromEnv[k.field] = true
		err := setRegcenterValue(rv.Field(k.field), raw)
		if err == nil && k.key == "postgres" {
			err = postgresURL(raw)
		}
		if err != nil {
			bad = true
			errs = append(errs, &problem{place: "regcenter", subject: k.key, detail: err.Error(), cause: err,
				hint: "from environment variable " + k.env})
		}
	}
	setBy := map[int]yamldoc.Pair{} // the file's key that set each field
	for _, k := range regcenterKeys {
		p, ok := file[k.key]
		if !ok || fromEnv[k.field] {
			continue
		}
		fv := reflect.New(rv.Field(k.field).Type()).Elem()
		var raw any
		err := p.Value.Decode(&raw)
		if err == nil {
			err = setRegcenterValue(fv, raw)
		}
		if err == nil && k.key == "postgres" {
			err = postgresURL(fv.String())
		}
		if err != nil {
			bad = true
			errs = append(errs, &problem{place: "regcenter", subject: k.key, line: p.KeyNode.Line, detail: err.Error(), cause: err})
			continue
		}
		if first, twice := setBy[k.field]; twice {
			// url and postgres: two names of one setting.
			if !reflect.DeepEqual(fv.Interface(), rv.Field(k.field).Interface()) {
				bad = true
				errs = append(errs, &problem{place: "regcenter", subject: k.key, line: p.KeyNode.Line,
					detail: fmt.Sprintf("differs from %s at line %d, which sets the same thing; keep one of the two keys", first.Key, first.KeyNode.Line)})
			}
			continue
		}
		setBy[k.field] = p
		rv.Field(k.field).Set(fv)
	}

	// The environment may move the file to another registry: a variable
	// naming one registry replaces the file's naming of the others. Two
	// such variables are refused.
	var named []string
	for _, name := range registryVars {
		if strings.TrimSpace(getenv(name)) != "" {
			named = append(named, name)
		}
	}
	switch {
	case len(named) > 1:
		verb := "are both set"
		if len(named) > 2 {
			verb = "are all set"
		}
		return rc, append(errs, &problem{place: "regcenter", kinds: []error{regcenter.ErrInvalidConfig},
			subject: strings.Join(named[:len(named)-1], ", ") + " and " + named[len(named)-1] + " " + verb,
			detail:  "each names the registry; unset all but one"})
	case bad:
		return rc, errs
	case len(named) == 1:
		keep := rc
		rc.Servers, rc.Etcd, rc.EmbeddedDir, rc.URL = nil, nil, "", ""
		switch named[0] {
		case registryVars[0]:
			rc.Servers = keep.Servers
		case registryVars[1]:
			rc.Etcd = keep.Etcd
		case registryVars[2]:
			rc.EmbeddedDir = keep.EmbeddedDir
		default: // URL, PG
			rc.URL = keep.URL
		}
	}

	rc = rc.WithDefaults()
	if err := rc.Validate(); err != nil {
		e := &problem{subject: err.Error(), cause: err}
		urlName := "regcenter.url"
		if p, ok := setBy[urlField]; ok && p.Key == "postgres" {
			urlName = "regcenter.postgres (PostgreSQL)"
		}
		var given []string // the registries the file names
		for _, r := range []struct {
			name string
			set  bool
		}{
			{"regcenter.servers (ZooKeeper)", len(rc.Servers) > 0},
			{"regcenter.etcd (etcd)", len(rc.Etcd) > 0},
			{"regcenter.embeddedDir (an embedded etcd member)", rc.EmbeddedDir != ""},
			{urlName, rc.URL != ""},
		} {
			if r.set {
				given = append(given, r.name)
			}
		}
		switch {
		case len(given) == 0:
			e.hint = "set regcenter.servers (ZooKeeper), regcenter.etcd (etcd), regcenter.embeddedDir (an embedded etcd member) " +
				"or regcenter.postgres (PostgreSQL) in the file, or " + strings.Join(registryVars[:3], ", ") + " or " +
				registryVars[4] + " in the environment"
		case len(given) == 2:
			e.hint = given[0] + " and " + given[1] + " name two registries; keep one"
		case len(given) > 2:
			e.hint = strings.Join(given[:len(given)-1], ", ") + " and " + given[len(given)-1] + " name several registries; keep one"
		}
		return rc, append(errs, e)
	}
	return rc, errs
}

// postgresURL checks that the value of the postgres key (or of
// SHARDJOB_REGCENTER_PG) names PostgreSQL; regcenter.Config.Validate
// checks the rest of it, as it checks url's. The URL is not repeated: it
// may hold a password, which Validate refuses without showing it.
func postgresURL(s string) error {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme == "" {
		return errors.New("is not a URL such as postgres://user@host:5432/db")
	}
	if sc := strings.ToLower(u.Scheme); sc != "postgres" && sc != "postgresql" {
		return fmt.Errorf("has the scheme %q, not postgres: name a registry of another kind with url", u.Scheme)
	}
	return nil
}

// urlField is the index of regcenter.Config's URL.
var urlField = func() int {
	f, _ := reflect.TypeFor[regcenter.Config]().FieldByName("URL")
	return f.Index[0]
}()

var durationType = reflect.TypeFor[time.Duration]()

// setRegcenterValue stores raw, a decoded YAML value or an environment
// variable's string, into fv.
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
		case string: // comma-separated, as in the environment
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
		return "the string " + yamldoc.QuoteShort(x)
	default:
		return fmt.Sprint(x)
	}
}
