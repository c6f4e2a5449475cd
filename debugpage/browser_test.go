package debugpage_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/overload"
)

// findBrowser returns the path of a Chromium or Chrome on PATH. Without
// one the test is skipped, unless FLOODGATE_REQUIRE_BROWSER=1 (as in CI)
// makes that a failure.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "no browser found on PATH (chromium, chromium-browser, google-chrome); install one (Debian: apt-get install chromium) to run the page in a real browser"
	if os.Getenv("FLOODGATE_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + "; FLOODGATE_REQUIRE_BROWSER=1 makes this a failure")
	}
	t.Skip(msg)
	return ""
}

// TestBrowser loads the page in a headless Chromium while traffic runs
// through an httpmw-limited handler that reports to it, and checks that
// the numbers the page's script puts on screen match what the clients
// were answered once traffic stops. It saves a screenshot in the test's
// temporary directory, and over docs/debugpage.png (the README's picture)
// when FLOODGATE_UPDATE_SCREENSHOT=1. -short leaves it out: Chromium
// takes seconds to start.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short leaves out the browser test, which starts Chromium; run without -short")
	}
	browser := findBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Six clients, client i sending 15*(i+1) requests against 20 per
	// minute each: the later ones are mostly refused.
	primary := core.MustNew(core.PerMinute(20).WithName("per-client"))
	fb := &counted{Keyed: primary}
	page, err := debugpage.New(
		debugpage.WithWindow(time.Minute),
		debugpage.WithLimiter("api", primary),
		debugpage.WithHealth("primary store", fb),
	)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := httpmw.New(fb, keyfunc.Header("X-Client"), httpmw.WithObserver(page))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})))
	mux.Handle("/debug/floodgate/", page)
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	defer srv.Close()

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.Headless,
		chromedp.NoSandbox, // Chromium refuses to start as root with its sandbox
		chromedp.DisableGPU,
		chromedp.WindowSize(1200, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	start := time.Now()
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/debug/floodgate/"), chromedp.WaitVisible("#total-allowed")); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	t.Logf("browser started and page loaded in %v", time.Since(start).Round(time.Millisecond))

	// Traffic: a bounded number of requests, paced over about 2 s so
	// that the page updates while it runs; it stops by itself.
	type tally struct{ ok, refused map[string]int }
	done := make(chan tally, 1)
	go func() {
		got := tally{ok: map[string]int{}, refused: map[string]int{}}
		defer func() { done <- got }()
		client := srv.Client()
		for round := range 90 {
			for c := range 6 {
				if round >= 15*(c+1) {
					continue
				}
				key := "client-" + strconv.Itoa(c)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/x", nil)
				req.Header.Set("X-Client", key)
				res, err := client.Do(req)
				if err != nil {
					return
				}
				res.Body.Close()
				switch res.StatusCode {
				case http.StatusOK:
					got.ok[key]++
				case http.StatusTooManyRequests:
					got.refused[key]++
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var got tally
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("traffic did not end in time")
	}
	var allowed, denied int
	topKey, topRefused := "", 0
	for _, n := range got.ok {
		allowed += n
	}
	for k, n := range got.refused {
		denied += n
		if n > topRefused {
			topKey, topRefused = k, n
		}
	}
	if allowed+denied != 15*(1+2+3+4+5+6) || topKey != "client-5" || allowed > 6*21 {
		t.Fatalf("traffic: %d allowed, %d denied, top refused %s (%d); want all 315 answered, client-5 refused most", allowed, denied, topKey, topRefused)
	}
	// The observer counted the same.
	snap, _ := getJSON(t, page)
	if snap.Totals["allowed"] != uint64(allowed) || snap.Totals["denied"] != uint64(denied) ||
		snap.RefusedKeys.Keys[0].Key != debugpage.Redact(topKey) || snap.RefusedKeys.Keys[0].Count != uint64(topRefused) {
		t.Fatalf("observer: totals %v, top refused %+v; clients saw %d allowed, %d denied, %s refused %d times",
			snap.Totals, snap.RefusedKeys.Keys[0], allowed, denied, topKey, topRefused)
	}

	// The page's script polls once a second; wait for it to show the
	// final numbers.
	want := map[string]string{
		"allowed":     strconv.Itoa(allowed),
		"denied":      strconv.Itoa(denied),
		"top_key":     debugpage.Redact(topKey),
		"top_refused": strconv.Itoa(topRefused),
		"decisions":   strconv.Itoa(allowed + denied),
		"status":      "live",
	}
	const screen = `(() => {
		const text = id => { const e = document.getElementById(id); return e ? e.innerText : "(missing)"; };
		return {
			allowed: text("total-allowed"), denied: text("total-denied"),
			top_key: text("refused-key-0"), top_refused: text("refused-count-0"),
			decisions: text("health-primary-0"), status: text("status"),
		};
	})()`
	waitShown(t, tab, "the numbers", screen, want)
	t.Logf("page showed the final numbers %v after %v", want, time.Since(start).Round(time.Millisecond))

	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(t.TempDir(), "debugpage.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("FLOODGATE_UPDATE_SCREENSHOT") == "1" {
		if err := os.WriteFile(filepath.Join("..", "docs", "debugpage.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/debugpage.png (%d bytes)", len(png))
	}

	// The lists' footers: six clients fit the sketches, so both say every
	// key is counted exactly. Then 4000 more clients, one request each,
	// overflow the hottest keys' sketch (512 keys): its footer bounds the
	// keys it no longer monitors, in the words the server renders too.
	const exact = "Every key seen so far is monitored, with an exact count."
	const notes = `(() => ({hot: document.getElementById("hot-note").innerText, refused: document.getElementById("refused-note").innerText}))()`
	waitShown(t, tab, "the footers", notes, map[string]string{"hot": exact, "refused": exact})
	for i := range 4000 {
		page.Observe(ctx, core.Event{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "one-off-" + strconv.Itoa(i), Cost: 1})
	}
	snap, _ = getJSON(t, page)
	hot := snap.HotKeys
	if hot.Unmonitored == 0 || hot.Monitored != 512 || snap.RefusedKeys.Unmonitored != 0 {
		t.Fatalf("after 4000 one-off keys: hot %d unmonitored of %d, refused %d; want the hot sketch full", hot.Unmonitored, hot.Monitored, snap.RefusedKeys.Unmonitored)
	}
	unit := "requests"
	if hot.Unmonitored == 1 {
		unit = "request"
	}
	bounded := fmt.Sprintf("Keys not monitored: the page monitors up to 512 keys per list; any other key has had at most %d %s.", hot.Unmonitored, unit)
	waitShown(t, tab, "the footers", notes, map[string]string{"hot": bounded, "refused": exact})
	res, err := srv.Client().Get(srv.URL + "/debug/floodgate/")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(html), `id="hot-note">`+bounded+`<`) || !strings.Contains(string(html), `id="refused-note">`+exact+`<`) {
		t.Errorf("the server renders other footers than the script:\n%s", html)
	}
	if strings.Contains(string(html), "at most 0") {
		t.Error("a footer says at most 0")
	}

	// The chart's time axis: its ends are labelled under the chart's
	// left and right edges.
	const axis = `(() => {
		const c = document.getElementById("chart").getBoundingClientRect();
		const a = document.getElementById("axis-start"), b = document.getElementById("axis-end");
		const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
		return {start: a.innerText, end: b.innerText,
			left: String(Math.abs(ra.left - c.left) <= 2), right: String(Math.abs(rb.right - c.right) <= 2),
			below: String(ra.top >= c.bottom && rb.top >= c.bottom)};
	})()`
	gotAxis, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](axis))
	if err != nil {
		t.Fatalf("reading the axis: %v", err)
	}
	if want := map[string]string{"start": "60 s ago", "end": "now", "left": "true", "right": "true", "below": "true"}; fmt.Sprint(gotAxis) != fmt.Sprint(want) {
		t.Errorf("chart axis %v, want %v", gotAxis, want)
	}

	// Sheds by priority: the script rebuilds the table from the JSON,
	// with a row for a priority the page had none for when it loaded,
	// highest priority first.
	shed := core.Event{Transport: "http", Outcome: core.OutcomeShed, Key: "client-0", Cost: 1}
	for range 3 {
		page.Observe(overload.NewContext(ctx, overload.Sheddable), shed)
	}
	page.Observe(overload.NewContext(ctx, overload.Critical), shed)
	page.Observe(overload.NewContext(ctx, 5), shed)
	const sheds = `(() => {
		const text = id => { const e = document.getElementById(id); return e ? e.innerText : "(missing)"; };
		return {critical: text("shed-critical"), normal: text("shed-normal"), sheddable: text("shed-sheddable"), five: text("shed-5"),
			order: Array.from(document.querySelectorAll("#sheds-body tr"), tr => tr.cells[0].innerText).join(" "),
			total: text("total-shed")};
	})()`
	waitShown(t, tab, "the sheds", sheds, map[string]string{"critical": "1", "normal": "0", "sheddable": "3", "five": "1", "order": "5 critical normal sheddable", "total": "5"})
}

// waitShown evaluates script in tab, which returns what the page shows,
// until it returns want, for up to 10 s: the page's script refreshes the
// numbers once a second. what names what script reads, for the failure.
func waitShown(t *testing.T, tab context.Context, what, script string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](script))
		if err != nil {
			t.Fatalf("reading %s: %v", what, err)
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %s %q, want %q", what, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// counted is an in-memory limiter that reports its decisions as a store's
// health.
type counted struct {
	*core.Keyed
	n atomic.Uint64
}

func (c *counted) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := c.Keyed.Allow(ctx, key, cost)
	if err == nil {
		c.n.Add(1)
	}
	return d, err
}

func (c *counted) Health() core.Health {
	return core.Health{Breaker: "closed", StoreDecisions: c.n.Load()}
}
