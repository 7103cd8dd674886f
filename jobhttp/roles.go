package jobhttp

import "github.com/shardjob/shardjob/internal/authz"

// The tokens and roles are shared with the dispatcher's REST API (package
// dispatch): the names below are the shared ones.

// ErrInvalidTokens is a token configuration that cannot be used: an
// unknown role, an empty or duplicate name, an empty or duplicate token, a
// token file that cannot be read. The message names the problem and the
// token's name — never the token.
var ErrInvalidTokens = authz.ErrInvalidTokens

// Role is what a token may do. Each role may do what the one below it
// may.
type Role = authz.Role

// Roles.
const (
	// RoleNone is no role: an anonymous request. It may read only when
	// reads are open (Options.ProtectReads off).
	RoleNone = authz.RoleNone
	// RoleViewer reads: every GET, with the runs' output and error text.
	RoleViewer = authz.RoleViewer
	// RoleOperator is a viewer that also steers the jobs and servers:
	// trigger, disable and enable servers and items, pause, resume,
	// shutdown, drain, undrain, rebalance.
	RoleOperator = authz.RoleOperator
	// RoleAdmin is an operator that also changes definitions: a job's
	// config and schedule, creating and removing jobs; and reads the
	// audit trail (GET /audit).
	RoleAdmin = authz.RoleAdmin
)

// ParseRole returns the role named s: viewer, operator or admin.
func ParseRole(s string) (Role, error) { return authz.ParseRole(s) }

// Token is one bearer token: who holds it (Name, written to the audit
// trail), what it may do (Role) and the token itself (Secret, never logged
// nor written to the audit trail).
type Token = authz.Token

// LegacyTokenName is the name Options.Token is known by: the single admin
// token of a handler configured before roles existed.
const LegacyTokenName = authz.LegacyTokenName

// Environment variables read by [TokensFromEnv].
const (
	// EnvTokensFile names a tokens file (see [LoadTokens]).
	EnvTokensFile = authz.EnvTokensFile
	// EnvTokens holds a tokens document itself, as a tokens file does
	// (a YAML list; a flow list fits on one line:
	// [{name: ci, role: operator, tokenEnv: CI_TOKEN}]).
	EnvTokens = authz.EnvTokens
)

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
// The tokens are checked as [ParseTokens] checks them. The dispatcher's
// REST API (dispatch.HandlerConfig.TokensFile) reads the same files.
func LoadTokens(path string) ([]Token, error) { return authz.LoadTokens(path) }

// ParseTokens reads a tokens document (see [LoadTokens]); dir is where a
// relative tokenFile is, getenv reads a tokenEnv. Every entry needs a
// name, a role and exactly one of token, tokenFile and tokenEnv; names and
// tokens must be unique. An error wraps ErrInvalidTokens and names the
// entry and the problem, never a token.
func ParseTokens(data []byte, dir string, getenv func(string) string) ([]Token, error) {
	return authz.ParseTokens(data, dir, getenv)
}

// TokensFromEnv reads the tokens the environment configures: the tokens
// file named by SHARDJOB_TOKENS_FILE and the tokens document in
// SHARDJOB_TOKENS, in that order (either or both; none: no tokens). A
// tokenFile in SHARDJOB_TOKENS is relative to the working directory.
func TokensFromEnv(getenv func(string) string) ([]Token, error) {
	return authz.TokensFromEnv(getenv)
}
