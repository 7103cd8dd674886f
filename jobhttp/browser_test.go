package jobhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// One headless Chromium serves every browser test of the binary; each test
// gets a tab of its own. The browser starts with the first test that asks
// for it and stops in TestMain.
var browser struct {
	once    sync.Once
	ctx     context.Context
	stop    []context.CancelFunc
	dataDir string
	err     error
}

// chromiumPath finds the browser as scripts/chromium.sh does.
func chromiumPath() (string, error) {
	if p := os.Getenv("SHARDJOB_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium on PATH: run 'bash scripts/chromium.sh ensure' (make test does) or set SHARDJOB_CHROMIUM")
}

func startBrowser() {
	path, err := chromiumPath()
	if err != nil {
		browser.err = err
		return
	}
	browser.dataDir, err = os.MkdirTemp("", "shardjob-chromium-")
	if err != nil {
		browser.err = err
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(browser.dataDir),
		chromedp.NoSandbox, // the tests run as root, where Chromium's sandbox cannot start
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	browser.stop = []context.CancelFunc{cancelBrowser, cancelAlloc}
	// The first Run starts the browser, which lives as long as that Run's
	// context: it gets bctx itself, and a timer bounds the start.
	started := make(chan error, 1)
	go func() { started <- chromedp.Run(bctx) }()
	select {
	case err = <-started:
	case <-time.After(time.Minute):
		cancelBrowser()
		err = errors.New("it did not start within a minute")
	}
	if err != nil {
		browser.err = fmt.Errorf("starting %s: %w", path, err)
		return
	}
	browser.ctx = bctx
}

// stopBrowser ends the browser, if one was started, and removes its
// profile.
func stopBrowser() {
	for _, stop := range browser.stop {
		stop()
	}
	if browser.dataDir != "" {
		_ = os.RemoveAll(browser.dataDir)
	}
}

// tab is one browser tab for one test, with a deadline on everything done
// in it. JavaScript exceptions and Content-Security-Policy violations in
// the page fail the test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func newTab(t *testing.T) *tab {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	tctx, closeTab := chromedp.NewContext(browser.ctx)
	ctx, cancel := context.WithTimeout(tctx, 90*time.Second)
	t.Cleanup(func() {
		cancel()
		closeTab()
	})
	chromedp.ListenTarget(tctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			t.Errorf("JavaScript exception in the page: %s", ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if ev.Entry.Source == log.SourceSecurity {
				t.Errorf("security violation in the page: %s", ev.Entry.Text)
			}
		}
	})
	tb := &tab{t: t, ctx: ctx}
	tb.run(log.Enable(), runtime.Enable())
	return tb
}

func (tb *tab) run(actions ...chromedp.Action) {
	tb.t.Helper()
	if err := chromedp.Run(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// open loads url and waits for the console's shell.
func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.run(chromedp.Navigate(url), chromedp.WaitVisible("#view", chromedp.ByQuery))
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitText waits until the text of the first element matching sel
// contains every one of want, and returns that text.
func (tb *tab) waitText(sel string, want ...string) string {
	tb.t.Helper()
	var conds []string
	for _, w := range want {
		conds = append(conds, "t.includes("+js(w)+")")
	}
	expr := fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; const t = e.textContent; return %s; })()`,
		js(sel), strings.Join(append(conds, "true"), " && "))
	for {
		err := chromedp.Run(tb.ctx, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond)))
		if err == nil {
			return tb.text(sel)
		}
		// A navigation (a form's submission) ends the poll; wait on the
		// new page.
		if tb.ctx.Err() == nil && strings.Contains(err.Error(), "(-32000)") {
			continue
		}
		tb.t.Fatalf("waiting for %s to show %q: %v; it shows %q", sel, want, err, tb.text(sel))
	}
}

// text returns the text of the first element matching sel, "" if none.
func (tb *tab) text(sel string) string {
	var s string
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tb.ctx), 5*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Evaluate(fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent : ""; })()`, js(sel)), &s))
	return s
}

// click clicks the first element matching sel once it is visible.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	// A click event on the element itself, not a mouse click at its
	// coordinates: a view's first refresh fills the page above the
	// controls, and a mouse click computed before it lands on what moved
	// there. (SVG elements have no click method: the event is dispatched.)
	tb.run(chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Evaluate(fmt.Sprintf(
		`document.querySelector(%s).dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, view: window}))`, js(sel)), nil))
}

// fill sets the value of the input matching sel as typing would, firing
// its input event.
func (tb *tab) fill(sel, value string) {
	tb.t.Helper()
	tb.run(chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Evaluate(fmt.Sprintf(
		`(() => { const e = document.querySelector(%s); e.value = %s; e.dispatchEvent(new Event("input", {bubbles: true})); })()`,
		js(sel), js(value)), nil))
}

// setToken enters the token in the page's token form.
func (tb *tab) setToken(token string) {
	tb.t.Helper()
	tb.run(
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		chromedp.SendKeys("#token", token, chromedp.ByQuery),
		chromedp.Click("#token-save", chromedp.ByQuery),
	)
	tb.waitText("#token-state", "token set")
}

// evaluate runs a JavaScript expression in the page.
func evaluate(expr string, res any) chromedp.Action {
	return chromedp.Evaluate(expr, res)
}
