package jobfile

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/suggest"
	"go.yaml.in/yaml/v3"
)

// section decodes one mapping strictly: every key must be known, each
// value of its kind. Problems are collected with the key's path and line.
type section struct {
	name string // "script", "http", "errorHandler"
	errs []string
}

func (s *section) failf(n *yaml.Node, key, format string, a ...any) {
	where := s.name + "." + key
	if n != nil && n.Line > 0 {
		where += " at line " + strconv.Itoa(n.Line)
	}
	s.errs = append(s.errs, where+": "+fmt.Sprintf(format, a...))
}

// pairs returns the keys of mapping n with their key and value nodes,
// reporting keys not in known (a near miss gets a suggestion).
func (s *section) pairs(n *yaml.Node, known ...string) map[string][2]*yaml.Node {
	out := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !contains(known, k.Value) {
			hint := ""
			if m := suggest.Nearest(k.Value, known); m != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", m)
			}
			s.failf(k, k.Value, "unknown key%s; known keys: %s", hint, strings.Join(sorted(known), ", "))
			continue
		}
		if _, dup := out[k.Value]; dup {
			s.failf(k, k.Value, "repeated")
			continue
		}
		out[k.Value] = [2]*yaml.Node{k, deref(v)}
	}
	return out
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (s *section) str(p map[string][2]*yaml.Node, key string, out *string) bool {
	kv, ok := p[key]
	if !ok {
		return false
	}
	v := kv[1]
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		s.failf(kv[0], key, "must be a string")
		return false
	}
	*out = v.Value
	return true
}

func (s *section) boolean(p map[string][2]*yaml.Node, key string, out *bool) {
	kv, ok := p[key]
	if !ok {
		return
	}
	if kv[1].Kind != yaml.ScalarNode || kv[1].ShortTag() != "!!bool" {
		s.failf(kv[0], key, "must be true or false")
		return
	}
	if err := kv[1].Decode(out); err != nil {
		s.failf(kv[0], key, "%v", err)
	}
}

func (s *section) integer(p map[string][2]*yaml.Node, key string, out *int) {
	kv, ok := p[key]
	if !ok {
		return
	}
	if kv[1].Kind != yaml.ScalarNode || kv[1].ShortTag() != "!!int" || kv[1].Decode(out) != nil {
		s.failf(kv[0], key, "must be an integer, got %q", kv[1].Value)
	}
}

func (s *section) duration(p map[string][2]*yaml.Node, key string, out *time.Duration) {
	var text string
	if !s.str(p, key, &text) {
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(text))
	if err != nil {
		s.failf(p[key][0], key, "%q is not a duration such as \"5s\" or \"1m30s\"", text)
		return
	}
	if d < 0 {
		s.failf(p[key][0], key, "%v must not be negative", d)
		return
	}
	*out = d
}

func (s *section) list(p map[string][2]*yaml.Node, key string, out *[]string) {
	kv, ok := p[key]
	if !ok {
		return
	}
	if kv[1].Kind != yaml.SequenceNode {
		s.failf(kv[0], key, "must be a list of strings")
		return
	}
	for _, it := range kv[1].Content {
		it = deref(it)
		if it.Kind != yaml.ScalarNode || it.ShortTag() == "!!null" {
			s.failf(it, key, "must be a list of strings; an entry is not a string")
			return
		}
		*out = append(*out, it.Value)
	}
}

func (s *section) strMap(p map[string][2]*yaml.Node, key string, out *map[string]string) {
	kv, ok := p[key]
	if !ok {
		return
	}
	if kv[1].Kind != yaml.MappingNode {
		s.failf(kv[0], key, "must be a mapping of names to strings")
		return
	}
	*out = map[string]string{}
	for i := 0; i+1 < len(kv[1].Content); i += 2 {
		k, v := kv[1].Content[i], deref(kv[1].Content[i+1])
		if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
			s.failf(k, key+"."+k.Value, "must be a string")
			continue
		}
		(*out)[k.Value] = v.Value
	}
}

// secret reads key, or the environment variable key+"Env" names.
func (s *section) secret(p map[string][2]*yaml.Node, key string, out *string) {
	var env string
	direct := s.str(p, key, out)
	if s.str(p, key+"Env", &env) {
		if direct {
			s.failf(p[key+"Env"][0], key+"Env", "give %s or %sEnv, not both", key, key)
			return
		}
		if strings.HasPrefix(strings.ToUpper(env), "SHARDJOB_") {
			s.failf(p[key+"Env"][0], key+"Env", "%s is one of the instance's own settings (credentials among them); name a variable kept for this handler", env)
			return
		}
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			s.failf(p[key+"Env"][0], key+"Env", "environment variable %s is not set", env)
			return
		}
		*out = v
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}
