package jobfile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/shardjob/shardjob/internal/yamldoc"
	"github.com/shardjob/shardjob/job"
)

// Spec is one job of a File: its Config and what runs it: a Go
// implementation bound by name (simple and dataflow jobs) or, for script
// and HTTP jobs, the section that describes the command or the request.
// The keys besides the Config's (which DecodeConfigNode decodes, as
// it decodes the config document stored in the registry) are handler,
// type, errorHandler, items and the section named after the type (script,
// http, dataflow).
type Spec struct {
	job.Config
	// Handler names the registered Go implementation that runs the job.
	// "" means the one registered under the job's Name; see HandlerName.
	// Script and HTTP jobs have none.
	Handler string
	// Type is the job's type (key type): TypeSimple (also for ""),
	// TypeDataflow, TypeScript or TypeHTTP.
	Type Type
	// Section is the mapping under the key named after Type (script:,
	// http:, dataflow:), undecoded: Build decodes it. nil when absent.
	Section *yaml.Node
	// ErrorHandler is the value of the key errorHandler, undecoded: a
	// handler's name, or a mapping with its type and settings (package
	// errhandler); Build decodes it. nil when absent.
	ErrorHandler *yaml.Node
	// Items is the value of the key items, undecoded: where the job's
	// items come from (a command or a URL listing their keys; package
	// jobtype/itemsource); Build decodes it. nil when absent: the items
	// are numbers.
	Items *yaml.Node

	sectionKey string // the key Section came from
}

// ListsByCommand reports whether the job's items: section runs a command
// to list its item keys.
func (s Spec) ListsByCommand() bool {
	if s.Items == nil {
		return false
	}
	_, ok := pair(s.Items, "command")
	return ok
}

// HandlerName returns Handler, or Name when Handler is "".
func (s Spec) HandlerName() string {
	if s.Handler == "" {
		return s.Name
	}
	return s.Handler
}

// Type is the type of a job of a File.
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
var specKeys = []string{"handler", "type", "errorHandler", "items", "script", "http", "dataflow"}

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

// DecodeSpec decodes one job of a File from a document of its own: the
// keys of one entry of a job file's jobs: list, decoded and validated
// exactly as Load decodes a file's job: strictly (an unknown key is
// job.ErrUnknownKey naming it, its line and the key probably meant), with
// every problem reported in one error whose entries wrap
// job.ErrInvalidConfig. The document's limits are job.DecodeConfig's
// (job.MaxDocumentBytes, job.MaxYAMLDepth, job.YAMLNodeBudget). The
// type's section and the error handler are returned undecoded, as in a
// File; Build builds them. On error the Spec is the zero value.
func DecodeSpec(ctx context.Context, data []byte) (Spec, error) {
	root, perr := yamldoc.Parse(ctx, data, yamldoc.Limits{Bytes: job.MaxDocumentBytes, Depth: job.MaxYAMLDepth, Budget: job.YAMLNodeBudget})
	if perr != nil {
		return Spec{}, join([]error{docProblem("job", perr)})
	}
	if root == nil {
		return Spec{}, join([]error{&problem{place: "job", subject: "document is empty"}})
	}
	var sp Spec
	if errs := sp.decode(root, jobPlace); len(errs) > 0 {
		return Spec{}, join(errs)
	}
	return sp, nil
}

// decode decodes the job's mapping n into s: its Config with
// DecodeConfigNode, the other keys here. placeOf names the job in
// errors, as NodeOptions.Place does. On error s holds what was
// decoded of the keys besides the Config's.
func (s *Spec) decode(n *yaml.Node, placeOf func(name string) string) []error {
	lines := map[string]int{}
	c, err := DecodeConfigNode(n, NodeOptions{Place: placeOf, Keys: specKeys, Key: func(k, v *yaml.Node) error {
		lines[k.Value] = k.Line
		return s.decodeKey(k.Value, v)
	}})
	s.Config = c
	var errs []error
	if err != nil {
		errs = entries(err)
	}
	for _, e := range s.check(lines) {
		e.place = placeOf(nameOf(n))
		errs = append(errs, e)
	}
	return errs
}

// jobPlace names a job of a document of its own in errors, as
// job.DecodeConfig does.
func jobPlace(name string) string {
	if name == "" {
		return "job (no name)"
	}
	return "job " + yamldoc.QuoteShort(name)
}

// nameOf returns the name a job's mapping gives, or "".
func nameOf(n *yaml.Node) string {
	if p, ok := pair(n, "name"); ok {
		if v := yamldoc.Resolve(p.Value); v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" {
			return v.Value
		}
	}
	return ""
}

// pair returns the pair of key in mapping n (merge keys followed).
func pair(n *yaml.Node, key string) (yamldoc.Pair, bool) {
	n = yamldoc.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return yamldoc.Pair{}, false
	}
	pairs, _ := yamldoc.Pairs(n, job.MaxYAMLDepth)
	for _, p := range pairs {
		if p.Key == key {
			return p, true
		}
	}
	return yamldoc.Pair{}, false
}

// decodeKey decodes key, one of specKeys, of value.
func (s *Spec) decodeKey(key string, value *yaml.Node) error {
	switch key {
	case "handler":
		err := nodeString(value, &s.Handler)
		if err == nil && (s.Handler == "" || strings.TrimSpace(s.Handler) != s.Handler) {
			err = fmt.Errorf("%s must be a non-empty name without surrounding spaces (omit the key to use the job's name)", yamldoc.QuoteShort(s.Handler))
		}
		return err
	case "type":
		var t string
		if err := nodeString(value, &t); err != nil {
			return err
		}
		if !slices.Contains(Types, Type(t)) {
			return fmt.Errorf("%s is not a job type (want simple, dataflow, script or http)", yamldoc.QuoteShort(t))
		}
		s.Type = Type(t)
	case "errorHandler":
		v := yamldoc.Resolve(value)
		if v.Kind != yaml.ScalarNode && v.Kind != yaml.MappingNode || v.ShortTag() == "!!null" {
			return fmt.Errorf("must be a handler's name or a mapping with its type and settings, got %s", yamldoc.KindName(v))
		}
		s.ErrorHandler = v
	case "items":
		v := yamldoc.Resolve(value)
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("must be a mapping with a command or a url, got %s", yamldoc.KindName(v))
		}
		s.Items = v
	default: // a type's section
		if s.sectionKey != "" {
			return fmt.Errorf("a job has one type's section; %s is given too", yamldoc.QuoteShort(s.sectionKey))
		}
		s.sectionKey = key
		v := yamldoc.Resolve(value)
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("must be a mapping, got %s", yamldoc.KindName(v))
		}
		s.Section = v
	}
	return nil
}

// check reports what is wrong between the keys of s. lines gives each key's
// line. The problems have no place.
func (s *Spec) check(lines map[string]int) []*problem {
	var errs []*problem
	t := s.TypeOrDefault()
	if s.sectionKey != "" && s.sectionKey != string(t) {
		errs = append(errs, &problem{subject: "key " + yamldoc.QuoteShort(s.sectionKey), line: lines[s.sectionKey],
			detail: fmt.Sprintf("belongs to type %s, but the job's type is %s", s.sectionKey, t),
			hint:   fmt.Sprintf("add type: %s, or remove the section", s.sectionKey)})
	}
	if (t == TypeScript || t == TypeHTTP) && s.sectionKey == "" {
		errs = append(errs, &problem{subject: "type " + string(t), line: lines["type"],
			detail: fmt.Sprintf("needs a %s: section describing the %s", t, map[Type]string{TypeScript: "command", TypeHTTP: "request"}[t])})
	}
	if !s.Bound() && s.Handler != "" {
		errs = append(errs, &problem{subject: "handler " + yamldoc.QuoteShort(s.Handler), line: lines["handler"],
			detail: fmt.Sprintf("a %s job runs no Go handler; remove the key", t)})
	}
	return errs
}

// nodeString decodes a scalar as a string (yamldoc.String).
func nodeString(n *yaml.Node, out *string) error { return yamldoc.String(n, out) }
