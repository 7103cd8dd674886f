// Package authz is the tokens, roles and audit trail the operator HTTP
// APIs share: package jobhttp's handler and console and package dispatch's
// REST API. A token has a name (who it stands for in the audit trail) and
// a role (viewer, operator, admin); tokens are compared in constant time,
// on their hashes, and never logged.
package authz

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrInvalidTokens is a token configuration that cannot be used: an
// unknown role, an empty or duplicate name, an empty or duplicate token, a
// token file that cannot be read. The message names the problem and the
// token's name — never the token.
var ErrInvalidTokens = errors.New("shardjob: invalid tokens")

// Role is what a token may do. Each role may do what the one below it
// may.
type Role int

// Roles.
const (
	// RoleNone is no role: an anonymous request.
	RoleNone Role = iota
	// RoleViewer reads: the jobs, their runs, the dispatcher's tasks and
	// caps.
	RoleViewer
	// RoleOperator is a viewer that also steers: the jobs and servers
	// (trigger, pause, drain...) and the dispatcher's tasks (assign,
	// finish, cancel).
	RoleOperator
	// RoleAdmin is an operator that also changes definitions and
	// configuration: a job's config and schedule, creating and removing
	// jobs, the dispatcher's caps and workers; and reads the audit trail.
	RoleAdmin
)

// String returns the role's name: viewer, operator, admin ("" for
// RoleNone).
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	case RoleNone:
		return ""
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole returns the role named s: viewer, operator or admin.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "viewer":
		return RoleViewer, nil
	case "operator":
		return RoleOperator, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("%w: unknown role %q: use viewer, operator or admin", ErrInvalidTokens, s)
}

// Token is one bearer token: who holds it (Name, written to the audit
// trail) and what it may do (Role).
type Token struct {
	// Name is who the token stands for: a person or a program, unique.
	Name string
	// Role is what the token may do.
	Role Role
	// Secret is the token itself, as sent in "Authorization: Bearer
	// <Secret>". It is never logged nor written to the audit trail.
	Secret string
}

// LegacyTokenName is the name a handler's single Token option is known
// by: the one admin token of a handler configured before roles existed.
const LegacyTokenName = "token"

// Environment variables read by [TokensFromEnv].
const (
	// EnvTokensFile names a tokens file (see [LoadTokens]).
	EnvTokensFile = "SHARDJOB_TOKENS_FILE"
	// EnvTokens holds a tokens document itself, as a tokens file does
	// (a YAML list; a flow list fits on one line:
	// [{name: ci, role: operator, tokenEnv: CI_TOKEN}]).
	EnvTokens = "SHARDJOB_TOKENS"
)

// tokenDoc is one entry of a tokens file.
type tokenDoc struct {
	Name      string `yaml:"name"`
	Role      string `yaml:"role"`
	Token     string `yaml:"token"`
	TokenFile string `yaml:"tokenFile"`
	TokenEnv  string `yaml:"tokenEnv"`
}

// maxTokensFile bounds a tokens file and a token file.
const maxTokensFile = 1 << 20

// LoadTokens reads a tokens file: a YAML list of tokens, each with its
// name, its role and its token given in one of three ways — token (the
// token itself), tokenFile (a file holding it, relative to the tokens
// file's directory; surrounding white space is dropped) or tokenEnv (an
// environment variable holding it):
//
//   - name: alice
//     role: admin
//     tokenFile: secrets/alice.token
//   - name: ci
//     role: operator
//     tokenEnv: SHARDJOB_CI_TOKEN
//   - name: dashboard
//     role: viewer
//     token: 3f9c0b6e2d...
//
// The tokens are checked as [ParseTokens] checks them.
func LoadTokens(path string) ([]Token, error) { return loadTokens(path, os.Getenv) }

func loadTokens(path string, getenv func(string) string) ([]Token, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the tokens file: %w", ErrInvalidTokens, err)
	}
	toks, err := ParseTokens(data, filepath.Dir(path), getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return toks, nil
}

// ParseTokens reads a tokens document (see [LoadTokens]); dir is where a
// relative tokenFile is, getenv reads a tokenEnv. Every entry needs a
// name, a role and exactly one of token, tokenFile and tokenEnv; names and
// tokens must be unique. An error wraps ErrInvalidTokens and names the
// entry and the problem, never a token.
func ParseTokens(data []byte, dir string, getenv func(string) string) ([]Token, error) {
	var docs []tokenDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&docs); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: not a list of {name, role, token | tokenFile | tokenEnv}: %s", ErrInvalidTokens, redactYAML(err))
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: the document lists no token", ErrInvalidTokens)
	}
	out := make([]Token, 0, len(docs))
	for i, d := range docs {
		what := fmt.Sprintf("token %d (%q)", i+1, d.Name)
		role, err := ParseRole(d.Role)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		n := 0
		for _, s := range []string{d.Token, d.TokenFile, d.TokenEnv} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("%w: %s: give exactly one of token, tokenFile and tokenEnv", ErrInvalidTokens, what)
		}
		secret := d.Token
		switch {
		case d.TokenFile != "":
			p := d.TokenFile
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := readBounded(p)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: tokenFile: %w", ErrInvalidTokens, what, err)
			}
			secret = strings.TrimSpace(string(b))
		case d.TokenEnv != "":
			secret = getenv(d.TokenEnv)
			if secret == "" {
				return nil, fmt.Errorf("%w: %s: tokenEnv: the environment variable %s is not set or empty", ErrInvalidTokens, what, d.TokenEnv)
			}
		}
		out = append(out, Token{Name: d.Name, Role: role, Secret: secret})
	}
	if err := CheckTokens(out); err != nil {
		return nil, err
	}
	return out, nil
}

// redactYAML keeps a YAML error's position and kind, not the values it
// quotes (which may be tokens).
func redactYAML(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "`"); i >= 0 {
		msg = msg[:i] + "..."
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// readBounded reads a file of at most maxTokensFile bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokensFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokensFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxTokensFile)
	}
	return data, nil
}

// TokensFromEnv reads the tokens the environment configures: the tokens
// file named by SHARDJOB_TOKENS_FILE and the tokens document in
// SHARDJOB_TOKENS, in that order (either or both; none: no tokens). A
// tokenFile in SHARDJOB_TOKENS is relative to the working directory.
func TokensFromEnv(getenv func(string) string) ([]Token, error) {
	var out []Token
	if p := getenv(EnvTokensFile); p != "" {
		toks, err := loadTokens(p, getenv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTokensFile, err)
		}
		out = append(out, toks...)
	}
	if doc := getenv(EnvTokens); doc != "" {
		toks, err := ParseTokens([]byte(doc), ".", getenv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTokens, err)
		}
		out = append(out, toks...)
	}
	if err := CheckTokens(out); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckTokens checks a set of tokens: each with a name, a known role and
// a token without surrounding white space; names and tokens unique. An
// error wraps ErrInvalidTokens and names the token, never its secret.
func CheckTokens(toks []Token) error {
	names := map[string]bool{}
	secrets := map[[sha256.Size]byte]string{}
	for _, t := range toks {
		switch {
		case strings.TrimSpace(t.Name) == "":
			return fmt.Errorf("%w: a token has no name (the name is who it stands for in the audit trail)", ErrInvalidTokens)
		case t.Role < RoleViewer || t.Role > RoleAdmin:
			return fmt.Errorf("%w: token %q: unknown role %v: use viewer, operator or admin", ErrInvalidTokens, t.Name, t.Role)
		case t.Secret == "":
			return fmt.Errorf("%w: token %q is empty", ErrInvalidTokens, t.Name)
		case strings.TrimSpace(t.Secret) != t.Secret:
			return fmt.Errorf("%w: token %q begins or ends with white space", ErrInvalidTokens, t.Name)
		case names[t.Name]:
			return fmt.Errorf("%w: two tokens are named %q", ErrInvalidTokens, t.Name)
		}
		names[t.Name] = true
		sum := sha256.Sum256([]byte(t.Secret))
		if other, ok := secrets[sum]; ok {
			return fmt.Errorf("%w: tokens %q and %q are the same token", ErrInvalidTokens, other, t.Name)
		}
		secrets[sum] = t.Name
	}
	return nil
}

// Collect gathers a handler's tokens from its options, in order: legacy
// (when set, one admin token named LegacyTokenName), toks, and the tokens
// of the tokens file file (when set). The whole set is checked as
// CheckTokens checks it.
func Collect(legacy string, toks []Token, file string) ([]Token, error) {
	out := append([]Token{}, toks...)
	if legacy != "" {
		out = append([]Token{{Name: LegacyTokenName, Role: RoleAdmin, Secret: legacy}}, out...)
	}
	if file != "" {
		more, err := LoadTokens(file)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	if err := CheckTokens(out); err != nil {
		return nil, err
	}
	return out, nil
}
