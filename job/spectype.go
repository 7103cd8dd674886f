package job

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/yamldoc"
)

// Type is the type of a YAML-defined job (a File's Spec).
type Type string

// Job types.
const (
	// TypeSimple, the default, is a Go Job bound by name.
	TypeSimple Type = "simple"
	// TypeDataflow is a Go dataflow job (package jobtype/dataflow) bound by
	// name; its dataflow: section holds its settings.
	TypeDataflow Type = "dataflow"
	// TypeScript runs a command per item (package jobtype/script),
	// described by its script: section.
	TypeScript Type = "script"
	// TypeHTTP sends a request per item (package jobtype/httpjob),
	// described by its http: section.
	TypeHTTP Type = "http"
)

// Types lists the job types a File accepts.
var Types = []Type{TypeSimple, TypeDataflow, TypeScript, TypeHTTP}

// specKeys are the keys of a File's job besides the Config's.
var specKeys = []string{"handler", "type", "errorHandler", "script", "http", "dataflow"}


// TypeOrDefault returns Type, or TypeSimple when it is "".
func (s Spec) TypeOrDefault() Type {
	if s.Type == "" {
		return TypeSimple
	}
	return s.Type
}

// Bound reports whether the job runs a Go implementation bound by name
// (simple and dataflow jobs), rather than one built from its section.
func (s Spec) Bound() bool {
	t := s.TypeOrDefault()
	return t == TypeSimple || t == TypeDataflow
}

// decodeKey decodes one of specKeys (a job.NodeOptions.Key).
func (s *Spec) decodeKey(k, value *yaml.Node) error {
	switch k.Value {
	case "handler":
		err := nodeString(value, &s.Handler)
		if err == nil && (s.Handler == "" || strings.TrimSpace(s.Handler) != s.Handler) {
			err = fmt.Errorf("%s must be a non-empty name without surrounding spaces (omit the key to use the job's name)", quoteShort(s.Handler))
		}
		return err
	case "type":
		var t string
		if err := nodeString(value, &t); err != nil {
			return err
		}
		if !slices.Contains(Types, Type(t)) {
			return fmt.Errorf("%s is not a job type (want simple, dataflow, script or http)", quoteShort(t))
		}
		s.Type = Type(t)
	case "errorHandler":
		v := yamldoc.Resolve(value)
		if v.Kind != yaml.ScalarNode && v.Kind != yaml.MappingNode || v.ShortTag() == "!!null" {
			return fmt.Errorf("must be a handler's name or a mapping with its type and settings, got %s", yamldoc.KindName(v))
		}
		s.ErrorHandler = v
	default: // a type's section
		if s.sectionKey != "" {
			return fmt.Errorf("a job has one type's section; %s is given too", quoteShort(s.sectionKey))
		}
		s.sectionKey = k.Value
		v := yamldoc.Resolve(value)
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("must be a mapping, got %s", yamldoc.KindName(v))
		}
		s.Section = v
	}
	return nil
}

// decodeNode decodes a job's mapping n into s, naming the job with
// placeOf. The errors are its Config's and those between its keys.
func (s *Spec) decodeNode(n *yaml.Node, placeOf func(string) string) []error {
	lines := map[string]int{}
	c, errs := decodeConfigNode(n, NodeOptions{Place: placeOf, Keys: specKeys, Key: func(k, v *yaml.Node) error {
		lines[k.Value] = k.Line
		return s.decodeKey(k, v)
	}})
	s.Config = c
	if len(lines) > 0 {
		if placeOf == nil {
			placeOf = jobPlace
		}
		for _, e := range s.check(lines) {
			e.place = placeOf(c.Name)
			errs = append(errs, e)
		}
	}
	return errs
}

// check reports what is wrong between the keys of s. lines gives each key's
// line. The errors have no place.
func (s *Spec) check(lines map[string]int) []*configError {
	var errs []*configError
	t := s.TypeOrDefault()
	if s.sectionKey != "" && s.sectionKey != string(t) {
		errs = append(errs, &configError{key: s.sectionKey, subject: "key " + quoteShort(s.sectionKey), line: lines[s.sectionKey],
			detail: fmt.Sprintf("belongs to type %s, but the job's type is %s", s.sectionKey, t),
			hint:   fmt.Sprintf("add type: %s, or remove the section", s.sectionKey)})
	}
	if (t == TypeScript || t == TypeHTTP) && s.sectionKey == "" {
		errs = append(errs, &configError{key: "type", subject: "type " + string(t), line: lines["type"],
			detail: fmt.Sprintf("needs a %s: section describing the %s", t, map[Type]string{TypeScript: "command", TypeHTTP: "request"}[t])})
	}
	if !s.Bound() && s.Handler != "" {
		errs = append(errs, &configError{key: "handler", subject: "handler " + quoteShort(s.Handler), line: lines["handler"],
			detail: fmt.Sprintf("a %s job runs no Go handler; remove the key", t)})
	}
	return errs
}
