package debugpage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/debugpage"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/overload"
)

// shedAll is an overload guard that sheds every request, as a guard past
// its limit does.
type shedAll struct{}

func (shedAll) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Shed: true, Limit: core.PerSecond(1).WithName("guard")}, nil
}

func (shedAll) Refund(context.Context, string, int) error { return nil }

// TestShedByPriority: requests an adapter sheds are counted by the
// priority their context carried, in the JSON and on the page; requests
// not shed are not, whatever their priority. The priorities come from a
// header, through net/http middleware in front of httpmw, as an
// application sets them.
func TestShedByPriority(t *testing.T) {
	t.Parallel()
	p := debugpage.MustNew()
	shed := httpmw.MustNew(shedAll{}, keyfunc.Header("X-Key"), httpmw.WithObserver(p)).
		Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(prio string, n int) {
		t.Helper()
		for range n {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("X-Key", "k")
			if prio != "" {
				level, err := strconv.Atoi(prio)
				if err != nil {
					t.Fatal(err)
				}
				r = r.WithContext(overload.NewContext(r.Context(), overload.Priority(level)))
			}
			w := httptest.NewRecorder()
			shed.ServeHTTP(w, r)
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("a shed answered %d, want 503", w.Code)
			}
		}
	}
	s, _ := getJSON(t, p)
	const none = `[map[count:0 level:1 priority:critical] map[count:0 level:0 priority:normal] map[count:0 level:-1 priority:sheddable]]`
	if got := fmt.Sprint(s.ShedByPriority); got != none {
		t.Fatalf("before any shed: %s, want %s", got, none)
	}
	send("1", 1)   // critical
	send("", 2)    // none set: normal
	send("0", 1)   // normal, set
	send("-1", 3)  // sheddable
	send("7", 1)   // another priority, above critical
	send("-20", 2) // another, below sheddable
	// Admitted and denied requests with a priority are not sheds.
	ctx := overload.NewContext(context.Background(), overload.Sheddable)
	p.Observe(ctx, event("k", core.OutcomeAllowed))
	p.Observe(ctx, event("k", core.OutcomeDenied))

	s, _ = getJSON(t, p)
	const want = `[map[count:1 level:7 priority:7] map[count:1 level:1 priority:critical] map[count:3 level:0 priority:normal] map[count:3 level:-1 priority:sheddable] map[count:2 level:-20 priority:-20]]`
	if got := fmt.Sprint(s.ShedByPriority); got != want || s.Totals["shed"] != 10 {
		t.Fatalf("sheds by priority %s (of %d), want %s (of 10)", got, s.Totals["shed"], want)
	}
	_, html := get(t, p, "/debug/floodgate/")
	for id, n := range map[string]string{"7": "1", "critical": "1", "normal": "3", "sheddable": "3", "-20": "2"} {
		if !strings.Contains(html, `id="shed-`+id+`">`+n+`</td>`) {
			t.Errorf("the page does not show %s sheds of priority %s", n, id)
		}
	}
}

// TestObserveNoAllocs: observing a request allocates nothing, whatever
// its outcome, a shed of any priority included (each priority has its
// counter: no map, no label built).
func TestObserveNoAllocs(t *testing.T) { // not parallel: AllocsPerRun
	p := debugpage.MustNew()
	ctxs := []context.Context{
		context.Background(),
		overload.NewContext(context.Background(), overload.Critical),
		overload.NewContext(context.Background(), overload.Sheddable),
		overload.NewContext(context.Background(), 42),
	}
	events := []core.Event{
		event("a", core.OutcomeAllowed),
		event("b", core.OutcomeDenied),
		event("c", core.OutcomeShed),
		event("", core.OutcomeShed),
	}
	for _, ctx := range ctxs { // the first sight of each key fills the sketches
		for _, e := range events {
			p.Observe(ctx, e)
		}
	}
	// One run for each pair: AllocsPerRun truncates its average, so an
	// allocation in one pair of many would not show in a mixed run.
	for i, ctx := range ctxs {
		for _, e := range events {
			if n := testing.AllocsPerRun(100, func() { p.Observe(ctx, e) }); n != 0 {
				t.Errorf("Observe of %v (key %q, context %d) allocates %v times a call, want 0", e.Outcome, e.Key, i, n)
			}
		}
	}
	s, _ := getJSON(t, p)
	if s.Totals["shed"] == 0 || len(s.ShedByPriority) != 4 {
		t.Errorf("the sheds were not counted: %d, by priority %v", s.Totals["shed"], s.ShedByPriority)
	}
}
