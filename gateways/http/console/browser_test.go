package console

// The console in a real browser: Debian's Chromium, headless, driven by
// chromedp. `make test-console` installs Chromium when it is missing and
// sets CONSOLE_TESTS=1, under which a missing browser fails the run;
// otherwise the browser tests skip when no Chromium is found.
//
// Screenshots go to $CONSOLE_ARTIFACTS when set (make test-console sets
// bin/console-artifacts), else to a temporary directory that is kept only
// when a test fails; the directory is printed either way.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// afterAll holds what TestMain undoes once every test has run.
var afterAll []func()

var browser struct {
	once    sync.Once
	err     error
	path    string
	ctx     context.Context // the browser; tabs are contexts below it
	cancel  func()
	dataDir string

	shots     string // where screenshots go
	keepShots bool
	failed    bool
	mu        sync.Mutex
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dataDir != "" {
		os.RemoveAll(browser.dataDir)
	}
	if browser.shots != "" {
		switch {
		case browser.keepShots:
			fmt.Printf("console screenshots: %s\n", browser.shots)
		case code != 0 || browser.failed:
			fmt.Printf("console screenshots (kept, a test failed): %s\n", browser.shots)
		default:
			os.RemoveAll(browser.shots)
		}
	}
	for _, f := range afterAll {
		f()
	}
	os.Exit(code)
}

// chromiumPath finds the browser: $CHROMIUM, Debian's /usr/bin/chromium,
// or one on PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts the one headless Chromium the tests share, with the
// flags this machine's closed network needs (no background connections,
// no QUIC) and a fresh profile.
func startBrowser() {
	browser.path = chromiumPath()
	if browser.path == "" {
		return
	}
	if dir := os.Getenv("CONSOLE_ARTIFACTS"); dir != "" {
		browser.shots, browser.keepShots = dir, true
		browser.err = os.MkdirAll(dir, 0o755)
	} else {
		browser.shots, browser.err = os.MkdirTemp("", "aerostream-console-shots-")
	}
	if browser.err != nil {
		return
	}
	browser.dataDir, browser.err = os.MkdirTemp("", "aerostream-console-chromium-")
	if browser.err != nil {
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser.path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(browser.dataDir),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	browser.ctx = ctx
	browser.cancel = func() { cancelCtx(); cancelAlloc() }
	// The first Do starts the browser, which lives as long as the context
	// of that call (so no timeout here); a broken install fails now, with
	// Chromium's own words.
	if err := chromedp.Do(ctx); err != nil {
		browser.err = fmt.Errorf("starting %s: %w", browser.path, err)
	}
}

// tab is one browser tab with its JavaScript problems collected.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	mu   sync.Mutex
	errs []string
	seen chan struct{} // a problem was recorded
}

// newTab opens a tab on the shared browser, skipping the test when there
// is no browser and the make target did not ask for one.
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	browser.once.Do(startBrowser)
	if browser.path == "" {
		if os.Getenv("CONSOLE_TESTS") != "" {
			t.Fatal("no Chromium found (looked at $CHROMIUM, /usr/bin/chromium and PATH); make test-console installs Debian's chromium package")
		}
		t.Skip("no Chromium found ($CHROMIUM, /usr/bin/chromium, PATH): `make test-console` installs it and runs these tests")
	}
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx)
	tb := &tab{t: t, ctx: ctx, base: base, seen: make(chan struct{}, 1)}
	// Console subscribes before it returns, so nothing the pages log is
	// missed; it joins console API calls, uncaught exceptions and the
	// browser's log.
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			tb.consider(m)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return tb
}

// consider records a message that means the console misbehaved: an
// exception, or an error or warning from anything but the network. Network
// entries are the API's own 4xx and 5xx answers, which the pages show on
// purpose; a blocked script, a policy violation or console.error are the
// console's fault.
func (tb *tab) consider(m chromedp.ConsoleMessage) {
	switch {
	case m.IsException():
	case m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning:
		return
	case m.Source == "network":
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.errs = append(tb.errs, fmt.Sprintf("%s (source %q) at %s:%d", m, m.Source, m.URL, m.Line+1))
	select {
	case tb.seen <- struct{}{}:
	default:
	}
}

// checkClean fails the test on any JavaScript problem seen so far.
func (tb *tab) checkClean(where string) {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, e := range tb.errs {
		tb.t.Errorf("%s: %s", where, e)
	}
	tb.errs = nil
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.shot("failed-" + sanitize(what))
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// evalAs evaluates a JavaScript expression in the tab's page.
func evalAs[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// open loads a page and waits until its script has drawn it (or shown the
// API's error), returning the state: "ready" or "error".
func (tb *tab) open(path string) string {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(tb.base+path))
	return tb.settle(path)
}

// settle waits for the page's script to finish its current load.
func (tb *tab) settle(what string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Poll[string](`(function () {
		var s = document.body && document.body.getAttribute('data-state');
		return s === 'ready' || s === 'error' ? s : null;
	})()`, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		tb.shot("failed-settle")
		tb.t.Fatalf("%s: the page never finished loading: %v", what, err)
	}
	return state
}

// unsettle forgets the page's load state, for an action whose load
// starts a moment after it returns.
func (tb *tab) unsettle() {
	tb.t.Helper()
	evalAs[bool](tb, `document.body.removeAttribute('data-state'), true`)
}

// waitFor waits until a JavaScript predicate holds. It asks from here
// rather than with an in-page poll, because a page that navigates away
// (a delete that goes back to the list) takes an in-page poll with it.
func (tb *tab) waitFor(what, predicate string) {
	tb.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](predicate))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		select {
		case <-tb.ctx.Done():
			tb.t.Fatalf("%s: %v", what, tb.ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	tb.shot("failed-" + sanitize(what))
	tb.t.Fatalf("%s: not within 30s (last error %v)", what, lastErr)
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	return evalAs[string](tb, fmt.Sprintf(`(function () { var e = document.querySelector(%q); return e ? e.textContent : %q; })()`, sel, "<missing "+sel+">"))
}

// column is the text of every cell of one column of one table.
func (tb *tab) column(table, col string) []string {
	tb.t.Helper()
	return evalAs[[]string](tb, fmt.Sprintf(`Array.from(document.querySelectorAll('table.%s td[data-col=%s]')).map(function (e) { return e.textContent; })`, table, col))
}

// shot saves a full-page PNG under the artifacts directory.
func (tb *tab) shot(name string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := filepath.Join(browser.shots, sanitize(tb.t.Name()+"-"+name)+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tb.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	tb.t.Logf("screenshot %s", file)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// markFailed keeps the screenshots of a failed run.
func markFailed(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			browser.mu.Lock()
			browser.failed = true
			browser.mu.Unlock()
		}
	})
}

// The guard itself: a page that logs an error and throws is caught, so a
// clean run of the console means something.
func TestBrowserCatchesJSErrors(t *testing.T) {
	markFailed(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!DOCTYPE html><title>bad</title><body><script>
console.error("boom"); setTimeout(function () { document.body.setAttribute('data-state', 'ready'); }, 0); missing();
</script></body>`)
	}))
	defer ts.Close()
	tb := newTab(t, ts.URL)
	tb.open("/")
	// The exception event may trail the page's own work by a moment.
	tb.waitForProblems(2)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	got := strings.Join(tb.errs, "\n")
	if !strings.Contains(got, "boom") || !strings.Contains(got, "missing is not defined") {
		t.Errorf("problems seen:\n%s", got)
	}
	tb.errs = nil
}

func (tb *tab) waitForProblems(n int) {
	tb.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		tb.mu.Lock()
		have := len(tb.errs)
		tb.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-tb.seen:
		case <-timeout:
			tb.t.Fatalf("saw %d JavaScript problems, want %d", have, n)
		}
	}
}
