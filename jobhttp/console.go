package jobhttp

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// consoleFS holds the web console: plain HTML, CSS and JavaScript files,
// served as they are (no build step).
//
//go:embed console
var consoleFS embed.FS

// consoleFile is one embedded file, ready to serve.
type consoleFile struct {
	data        []byte
	contentType string
	etag        string
}

// consoleFiles maps a path under /console/ ("index.html",
// "views/jobs.js") to its file.
var consoleFiles = loadConsole()

func loadConsole() map[string]consoleFile {
	types := map[string]string{
		".html": "text/html; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".svg":  "image/svg+xml",
	}
	out := map[string]consoleFile{}
	err := fs.WalkDir(consoleFS, "console", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := consoleFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[strings.TrimPrefix(p, "console/")] = consoleFile{
			data: data, contentType: types[path.Ext(p)], etag: `"` + hex.EncodeToString(sum[:8]) + `"`,
		}
		return nil
	})
	if err != nil {
		panic("jobhttp: reading the embedded console: " + err.Error()) // the files are compiled in
	}
	return out
}

// consoleRoutes registers the console's pages and the endpoints only the
// console added: the schedule edit and the dispatcher's queues.
func (h *handler) consoleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console", h.consoleRedirect)
	mux.HandleFunc("GET /console/{file...}", h.consoleFile)
	mux.HandleFunc("POST /jobs/{job}/schedule", h.op(RoleAdmin, "schedule", h.schedule))
	mux.HandleFunc("GET /dispatch/workers", h.dispatchWorkers)
	mux.HandleFunc("GET /chains", h.chains)
}

// consoleRedirect sends /console to /console/ with a relative Location,
// so that it is right under whatever prefix the handler is mounted at
// (http.Redirect would make it absolute from the stripped path).
func (h *handler) consoleRedirect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", "console/")
	w.WriteHeader(http.StatusMovedPermanently)
}

func (h *handler) consoleFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "" {
		name = "index.html"
	}
	f, ok := consoleFiles[name]
	if !ok || f.contentType == "" {
		h.reply(w, http.StatusNotFound, httpError{Error: "not found: the console has no file " + name})
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	// Revalidated on every load (the ETag makes that cheap), so a new
	// binary's console is used at once.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}
