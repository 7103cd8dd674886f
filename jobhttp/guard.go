package jobhttp

import (
	"net/http"
	"strings"

	"github.com/shardjob/shardjob/internal/authz"
)

// securityHeaders are set on every response. The console's page loads its
// scripts and styles from its own files only (no inline script), may not
// be framed, and sends no Referer; no response carries a CORS header, so
// other sites' scripts cannot read any of it.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
}

// maxBody bounds every request body; endpoints that read a body bound it
// further (the config document to maxConfigBody, which is this).
const maxBody = maxConfigBody

// guardedMux is the handler's mux behind its guard: every request gets the
// security headers and a bounded body; a POST from another site is
// refused before its token is looked at; with ProtectReads a read needs
// the token too.
type guardedMux struct {
	*http.ServeMux
	h      *handler
	origin *http.CrossOriginProtection
}

// newMux returns the handler's mux, with the console's routes, behind the
// guard. NewHandler adds the other routes to it.
func (h *handler) newMux() *guardedMux {
	g := &guardedMux{ServeMux: http.NewServeMux(), h: h, origin: http.NewCrossOriginProtection()}
	h.consoleRoutes(g.ServeMux)
	return g
}

// ServeHTTP applies the guard, then the mux.
func (g *guardedMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.h.refusals.Flush()
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if g.h.protectReads && !isConsoleFile(r.URL.Path) && !g.h.readAllowed(w, r) {
			return
		}
	default:
		// Sec-Fetch-Site other than same-origin or none, or an Origin
		// whose host is not the request's Host: a page of another site
		// sent it (a form, or a script the browser let through).
		if err := g.origin.Check(r); err != nil {
			g.h.refusals.Refused(refusedCrossOrigin, "method", r.Method, "path", r.URL.Path,
				"origin", r.Header.Get("Origin"), "secFetchSite", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
			g.h.reply(w, http.StatusForbidden, httpError{Error: "forbidden: cross-origin request refused (it came from a page of another site)"})
			return
		}
	}
	g.ServeMux.ServeHTTP(w, r)
}

// isConsoleFile reports whether p is one of the console's static files,
// which hold no data and are served without the token.
func isConsoleFile(p string) bool {
	return p == "/console" || strings.HasPrefix(p, "/console/")
}

// readAllowed checks the token of a read under ProtectReads, replying
// with the refusal when it fails: any role may read.
func (h *handler) readAllowed(w http.ResponseWriter, r *http.Request) bool {
	if h.keys.Empty() {
		h.refusals.Refused(refusedReadNoToken, "path", r.URL.Path, "remote", r.RemoteAddr)
		h.reply(w, http.StatusForbidden, httpError{Error: "forbidden: reads need a token and none is configured"})
		return false
	}
	_, ok, _ := h.authenticate(w, r, "read")
	return ok
}

// authenticate returns who r's "Authorization: Bearer <token>" stands
// for, replying 401 Unauthorized when it carries none of the handler's
// tokens. what names the refused request in the log ("operation" or
// "read": a fixed word, as it names a kind of refusal); the token itself
// is never logged. logged reports whether the refusal was written to the
// log (not only counted).
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request, what string) (p authz.Principal, ok, logged bool) {
	p, _, ok = h.keys.Identify(r)
	if ok {
		return p, true, false
	}
	logged = h.refusals.Refused(what+" refused: missing or wrong token", "path", r.URL.Path, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", `Bearer realm="shardjob"`)
	h.reply(w, http.StatusUnauthorized, httpError{Error: "unauthorized: send Authorization: Bearer <token>"})
	return authz.Principal{}, false, logged
}

// hasToken reports whether r carries one of the handler's tokens,
// whatever its role.
func (h *handler) hasToken(r *http.Request) bool {
	_, _, ok := h.keys.Identify(r)
	return ok
}

// The kinds of refusal: each is logged at most once per refusalInterval.
const (
	refusedCrossOrigin = "cross-origin request refused"
	refusedReadNoToken = "read refused: reads need a token and none is configured"
	refusedReadOnly    = "operation refused: no token configured (read-only)"
)

// refusalInterval is how often one kind of refusal is written to the log
// at most.
const refusalInterval = authz.RefusalInterval
