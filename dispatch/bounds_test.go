package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

// getRaw GETs path and returns the status and the raw body.
func (c restClient) getRaw(path string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(testCtx(c.t), http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// GET /v1/tasks stays within its byte budget and pages with "next":
// 16 tasks of 1 MB infos come one per page, all of them, each whole.
func TestListTasksPagedByBytes(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		d := open(t, cfg)
		mustWorker(t, d, "w", 1)
		big := make([]NewTask, 16)
		for i := range big {
			big[i] = NewTask{ExternalID: fmt.Sprintf("big-%02d", i), Info: bytes.Repeat([]byte{byte('a' + i)}, 1_000_000)}
		}
		now := time.Now()
		if _, err := d.Assign(ctx, Assignment{Worker: "w", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: big}); err != nil {
			t.Fatal(err)
		}
		h, err := NewHandler(d, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		c := restClient{t, srv.URL}

		seen := map[string]bool{}
		pages := 0
		for after := ""; ; pages++ {
			if pages > 20 {
				t.Fatal("more than 20 pages for 16 tasks")
			}
			code, raw := c.getRaw("/v1/tasks?limit=1000&after=" + url.QueryEscape(after))
			if code != 200 {
				t.Fatalf("page %d: %d %.200s", pages, code, raw)
			}
			if len(raw) > 1<<20 {
				t.Fatalf("page %d is %d bytes, over 1 MiB", pages, len(raw))
			}
			var page struct {
				Tasks []TaskJSON `json:"tasks"`
				Next  string     `json:"next"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatal(err)
			}
			for _, tk := range page.Tasks {
				if seen[tk.UUID] {
					t.Fatalf("task %s listed twice", tk.UUID)
				}
				seen[tk.UUID] = true
				i := int(tk.ExternalID[len(tk.ExternalID)-1]-'0') + 10*int(tk.ExternalID[len(tk.ExternalID)-2]-'0')
				if tk.Info != string(big[i].Info) {
					t.Errorf("task %s: info of %d bytes is not what was assigned", tk.ExternalID, len(tk.Info))
				}
			}
			if page.Next == "" {
				break
			}
			if len(page.Tasks) == 0 || page.Next != page.Tasks[len(page.Tasks)-1].UUID {
				t.Fatalf("page %d: next %q is not its last task", pages, page.Next)
			}
			after = page.Next
		}
		if len(seen) != 16 || pages != 15 {
			t.Errorf("listed %d tasks in %d pages, want 16 in 16", len(seen), pages+1)
		}

		// Small tasks still page by limit, and the last page has no next.
		small := make([]NewTask, 12)
		for i := range small {
			small[i] = NewTask{ExternalID: fmt.Sprintf("small-%02d", i), Info: []byte("s")}
		}
		mustWorker(t, d, "v", 1)
		if _, err := d.Assign(ctx, Assignment{Worker: "v", Start: now.Add(time.Hour), End: now.Add(2 * time.Hour), Tasks: small}); err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for after := ""; ; {
			code, body := c.do("GET", "/v1/tasks?worker=v&limit=5&after="+url.QueryEscape(after), "", true)
			if code != 200 {
				t.Fatalf("%d %v", code, body)
			}
			sizes = append(sizes, len(body["tasks"].([]any)))
			next, _ := body["next"].(string)
			if next == "" {
				break
			}
			after = next
		}
		if fmt.Sprint(sizes) != "[5 5 2]" {
			t.Errorf("pages of %v tasks, want [5 5 2]", sizes)
		}

		// The Go API's own bound: reading stops at the task that reaches it.
		ts, err := d.Tasks(ctx, Filter{Worker: "w", Limit: 1000, MaxBytes: 1_500_000})
		if err != nil || len(ts) != 2 {
			t.Errorf("Tasks with MaxBytes 1.5 MB read %d tasks (%v), want 2", len(ts), err)
		}
		if _, err := d.Tasks(ctx, Filter{MaxBytes: -1}); !errors.Is(err, ErrInvalid) {
			t.Errorf("negative MaxBytes: err = %v", err)
		}
	})
}

func TestWorkerNames(t *testing.T) {
	ctx := testCtx(t)
	d := open(t, Config{DSN: filepath.Join(t.TempDir(), "d.db"), Logger: testlog.Logger(t)})
	h, err := NewHandler(d, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := restClient{t, srv.URL}
	refused := []struct{ name, says string }{
		{"", "1 to 128 bytes"},
		{strings.Repeat("n", 129), "1 to 128 bytes"},
		{"a/b", "'/'"},
		{"a\x00b", "unprintable"},
		{"a\nb", "unprintable"},
		{"a\x7fb", "unprintable"},
		{"tab\there", "unprintable"},
		{"bad\xffutf8", "not valid UTF-8"},
		{"nb\u00a0sp", "unprintable"},
		{"rtl\u202eoverride", "unprintable"},
	}
	for _, r := range refused {
		err := d.PutWorker(ctx, Worker{Name: r.name, MaxRunning: 1})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), r.says) {
			t.Errorf("name %q: err = %v, want ErrInvalid saying %q", r.name, err, r.says)
		}
		if r.name == "" {
			continue
		}
		code, body := c.do("PUT", "/v1/workers/"+url.PathEscape(r.name), `{"max_running": 1}`, true)
		if code != 400 || !strings.Contains(fmt.Sprint(body["error"]), r.says) {
			t.Errorf("REST name %q: %d %v, want 400 saying %q", r.name, code, body, r.says)
		}
	}
	if ws, err := d.Workers(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("refused names were stored: %v %v", ws, err)
	}
	for _, ok := range []string{"acme", "tenant 7", "Zürich-报表", "<b>html<b> is text &amp;", strings.Repeat("n", 128)} {
		if err := d.PutWorker(ctx, Worker{Name: ok, MaxRunning: 1}); err != nil {
			t.Errorf("name %q: %v", ok, err)
			continue
		}
		w, err := d.Worker(ctx, ok)
		if err != nil || w.Name != ok {
			t.Errorf("name %q read back as %q (%v)", ok, w.Name, err)
		}
	}
}

// New workers past Config.MaxWorkers are refused; existing ones still update.
func TestMaxWorkers(t *testing.T) {
	eachStore(t, func(t *testing.T, cfg Config) {
		ctx := testCtx(t)
		cfg.MaxWorkers = 3
		d := open(t, cfg)
		for i := range 3 {
			mustWorker(t, d, fmt.Sprintf("w%d", i), 1)
		}
		err := d.PutWorker(ctx, Worker{Name: "w3", MaxRunning: 1})
		if !errors.Is(err, ErrTooManyWorkers) || !strings.Contains(err.Error(), "MaxWorkers") {
			t.Fatalf("a fourth worker: err = %v, want ErrTooManyWorkers naming MaxWorkers", err)
		}
		if _, err := d.Worker(ctx, "w3"); !errors.Is(err, ErrUnknownWorker) {
			t.Errorf("the refused worker was stored: %v", err)
		}
		if err := d.PutWorker(ctx, Worker{Name: "w1", MaxRunning: 7}); err != nil {
			t.Errorf("updating an existing worker at the limit: %v", err)
		}
		h, err := NewHandler(d, HandlerConfig{Token: testToken, Logger: testlog.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		code, body := restClient{t, srv.URL}.do("PUT", "/v1/workers/w9", `{"max_running": 1}`, true)
		if code != 409 || !strings.Contains(fmt.Sprint(body["error"]), "too many workers") {
			t.Errorf("REST fourth worker: %d %v, want 409 too many workers", code, body)
		}
		if ws, err := d.Workers(ctx); err != nil || len(ws) != 3 {
			t.Errorf("%d workers (%v), want 3", len(ws), err)
		}
	})
	def := Config{DSN: "x"}
	if err := def.validate(); err != nil || def.MaxWorkers != DefaultMaxWorkers {
		t.Errorf("default MaxWorkers %d (%v), want %d", def.MaxWorkers, err, DefaultMaxWorkers)
	}
	if err := (&Config{DSN: "x", MaxWorkers: -1}).validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative MaxWorkers: err = %v", err)
	}
}
