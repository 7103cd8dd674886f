package jobhttp

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// countOf returns the refused=N of a count line, or 1 for a line that
// reports one refusal.
func countOf(t *testing.T, line string) int {
	m := regexp.MustCompile(` refused=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		return 1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A flood of unauthenticated requests writes a couple of lines, not one
// per request, and the lines account for every refusal; another kind of
// refusal is written on its own.
func TestRefusalsAreLoggedAtMostOncePerInterval(t *testing.T) {
	var out testlog.Buffer
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	// No request here reaches the registry center: each is refused by
	// the guard or the token check first.
	g := NewHandler(nil, Options{Token: "the-token", Logger: slog.New(slog.NewTextHandler(&out, nil))}).(*guardedMux)
	g.h.refusals.SetClock(clock.Now)

	post := func(token string) int {
		r := httptest.NewRequest(http.MethodPost, "/jobs/report/trigger", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w.Code
	}
	const flood = 1000
	var wg sync.WaitGroup
	codes := make(chan int, flood)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < flood; i += 8 {
				tok := ""
				if i%2 == 1 {
					tok = "wrong"
				}
				codes <- post(tok)
			}
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusUnauthorized {
			t.Fatalf("a request without the token got %d", c)
		}
	}
	if got := out.Lines(); len(got) != 1 || !strings.Contains(got[0], "operation refused: missing or wrong token") {
		t.Fatalf("after %d refusals within the interval, the log has %d lines:\n%s", flood, len(got), strings.Join(got, "\n"))
	}

	// Another kind is not held back by the first.
	r := httptest.NewRequest(http.MethodPost, "/jobs/report/trigger", nil)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	g.ServeHTTP(httptest.NewRecorder(), r)
	if got := out.Lines(); len(got) != 2 || !strings.Contains(got[1], refusedCrossOrigin) {
		t.Fatalf("a cross-origin refusal was not written:\n%s", strings.Join(got, "\n"))
	}

	// Once the interval is over, the next request writes the count of
	// those not written; that request, refused too, starts the next count.
	clock.Advance(refusalInterval)
	post("")
	got := out.Lines()
	if len(got) != 3 || !strings.Contains(got[2], "refused 999 requests in the last 10s: operation refused: missing or wrong token") ||
		!strings.Contains(got[2], "latest.path=/jobs/report/trigger") {
		t.Fatalf("the count line is missing or wrong:\n%s", strings.Join(got, "\n"))
	}

	// Refusals that stop are counted all the same: any request after the
	// interval writes them.
	for range 5 {
		post("wrong")
	}
	clock.Advance(refusalInterval + 2*time.Second)
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/console/", nil))
	got = out.Lines()
	if len(got) != 4 || !strings.Contains(got[3], "refused 6 requests in the last 12s") {
		t.Fatalf("the count of a burst that stopped is missing:\n%s", strings.Join(got, "\n"))
	}
	total := 0
	for _, l := range got {
		if strings.Contains(l, "missing or wrong token") {
			total += countOf(t, l)
		}
	}
	if total != flood+1+5 {
		t.Errorf("the lines account for %d refusals, want %d:\n%s", total, flood+1+5, strings.Join(got, "\n"))
	}
	// Nothing is left waiting, and a quiet interval writes nothing more.
	clock.Advance(time.Hour)
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/console/", nil))
	if n := len(out.Lines()); n != 4 || g.h.refusals.Pending() != 0 {
		t.Errorf("%d lines, %d pending after a quiet hour", n, g.h.refusals.Pending())
	}
}
