package slogobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
	"github.com/floodgate/floodgate/slogobs"
)

// textLogger logs at level and above to a buffer, without the time.
func textLogger(level slog.Level) (*slog.Logger, *coretest.Buffer) {
	buf := &coretest.Buffer{}
	h := slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(h), buf
}

var (
	t0    = time.Unix(1_700_000_000, 0)
	api   = core.PerMinute(5).WithName("api")
	upper = func(k string) string { return "<" + strings.ToUpper(k) + ">" }
	down  = &core.StoreError{Op: "allow", Err: errors.New("dial tcp 10.0.0.9:6379: connection refused")}
)

func newObserver(t *testing.T, level slog.Level, opts ...slogobs.Option) (*slogobs.Observer, *coretest.Buffer, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(t0)
	logger, buf := textLogger(level)
	obs, err := slogobs.New(logger, append([]slogobs.Option{slogobs.WithClock(clock), slogobs.WithKeyRedaction(upper)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return obs, buf, clock
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func equalLines(t *testing.T, got string, want ...string) {
	t.Helper()
	g := lines(got)
	if got == "" {
		g = nil
	}
	for i := range max(len(g), len(want)) {
		var gi, wi string
		if i < len(g) {
			gi = g[i]
		}
		if i < len(want) {
			wi = want[i]
		}
		if gi != wi {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, gi, wi)
		}
	}
}

// TestLines: what each outcome writes, at which level, with which
// attributes.
func TestLines(t *testing.T) {
	t.Parallel()
	obs, buf, _ := newObserver(t, slog.LevelDebug)
	ctx := context.Background()
	noKey := fmt.Errorf("%w: header X-Key is missing or empty", core.ErrEmptyKey)
	for _, e := range []core.Event{
		{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "alice", Cost: 1, Decision: core.Decision{Allowed: true, Limit: api}},
		{Transport: "http", Outcome: core.OutcomeDenied, Key: "alice", Cost: 2, Decision: core.Decision{Limit: api, RetryAfter: 12 * time.Second, Overflow: true}, Held: time.Second},
		{Transport: "grpc", Outcome: core.OutcomeDenied, Admitted: true, Shadow: true, Key: "bob", Cost: 1, Decision: core.Decision{Limit: api, RetryAfter: time.Second}},
		{Transport: "http", Outcome: core.OutcomeDenied, Key: "bob", Cost: 1, Decision: core.Decision{Limit: api, RetryAfter: 250 * time.Millisecond, Leased: true}},
		{Transport: "http", Outcome: core.OutcomeBadKey, Err: noKey},
		{Transport: "http", Outcome: core.OutcomeBadCost, Key: "carol", Cost: 1000, Err: core.ErrCostTooLarge},
		{Transport: "grpc", Outcome: core.OutcomeError, Key: "dave", Err: errors.New("lookup of dave failed")},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailOpen, Admitted: true, Key: "erin", Cost: 1, Err: down},
		{Transport: "http", Outcome: core.OutcomeStoreError, Failure: core.FailClosed, Key: "erin", Cost: 1, Err: down},
		{Transport: "http", Outcome: core.OutcomeCanceled, Key: "frank", Cost: 1, Err: core.ErrWaitCanceled},
	} {
		obs.Observe(ctx, e)
	}
	equalLines(t, buf.String(),
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<ALICE> cost=2 retry_after=12s held=1s overflow=true`,
		`level=INFO msg="rate limit: would refuse (shadow mode, admitted)" outcome=denied transport=grpc limit=api key=<BOB> cost=1 retry_after=1s shadow=true`,
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<BOB> cost=1 retry_after=250ms leased=true`,
		`level=INFO msg="rate limit: request has no usable key" outcome=bad_key transport=http error="`+noKey.Error()+`"`,
		`level=INFO msg="rate limit: request cost is invalid" outcome=bad_cost transport=http key=<CAROL> cost=1000 error="`+core.ErrCostTooLarge.Error()+`"`,
		`level=ERROR msg="rate limit: error" outcome=error transport=grpc key=<DAVE> error="lookup of <DAVE> failed"`,
		`level=WARN msg="rate limit: store failed" outcome=store_error transport=http key=<ERIN> cost=1 failure=fail-open admitted=true error="core: store allow: dial tcp 10.0.0.9:6379: connection refused"`,
		`level=ERROR msg="rate limit: store failed" outcome=store_error transport=http key=<ERIN> cost=1 failure=fail-closed admitted=false error="core: store allow: dial tcp 10.0.0.9:6379: connection refused"`,
		`level=DEBUG msg="rate limit: request canceled while delayed" outcome=canceled transport=http key=<FRANK> cost=1 error="`+core.ErrWaitCanceled.Error()+`"`,
	)
}

// TestAllowed: admitted requests are logged at LevelAllowed, below Debug;
// a logger not enabled at a line's level gets nothing.
func TestAllowed(t *testing.T) {
	t.Parallel()
	ok := core.Event{Transport: "http", Outcome: core.OutcomeAllowed, Admitted: true, Key: "alice", Cost: 1, Decision: core.Decision{Allowed: true, Limit: api}}
	shaped := core.Event{Transport: "http", Outcome: core.OutcomeShaped, Admitted: true, Key: "alice", Cost: 1, Decision: core.Decision{Allowed: true, Limit: api, Delay: 250 * time.Millisecond}}
	obs, buf, _ := newObserver(t, slogobs.LevelAllowed)
	obs.Observe(context.Background(), ok)
	obs.Observe(context.Background(), shaped)
	equalLines(t, buf.String(),
		`level=DEBUG-4 msg="rate limit: allowed" outcome=allowed transport=http limit=api key=<ALICE> cost=1`,
		`level=DEBUG-4 msg="rate limit: allowed after a delay" outcome=shaped transport=http limit=api key=<ALICE> cost=1 delay=250ms`,
	)
	obs, buf, _ = newObserver(t, slog.LevelDebug)
	obs.Observe(context.Background(), ok)
	obs.Observe(context.Background(), shaped)
	if buf.String() != "" {
		t.Errorf("admissions written to a Debug logger:\n%s", buf)
	}
	obs, buf, _ = newObserver(t, slog.LevelInfo)
	obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeCanceled, Key: "frank"})
	if buf.String() != "" {
		t.Errorf("Debug lines written to an Info logger:\n%s", buf)
	}
}

// TestSampling: at most N lines a second of each kind; the next line
// written says how many were dropped.
func TestSampling(t *testing.T) {
	t.Parallel()
	obs, buf, clock := newObserver(t, slog.LevelInfo, slogobs.WithMaxPerSecond(2))
	ctx := context.Background()
	deny := func(key string, shadow bool) core.Event {
		return core.Event{Transport: "http", Outcome: core.OutcomeDenied, Admitted: shadow, Shadow: shadow, Key: key, Cost: 1, Decision: core.Decision{Limit: api, RetryAfter: time.Second}}
	}
	for i := range 5 {
		obs.Observe(ctx, deny(fmt.Sprintf("k%d", i), false))
	}
	obs.Observe(ctx, deny("s0", true)) // shadow refusals are sampled apart
	obs.Observe(ctx, core.Event{Transport: "http", Outcome: core.OutcomeBadKey})
	clock.Advance(999 * time.Millisecond) // still the same second
	obs.Observe(ctx, deny("k5", false))
	clock.Advance(time.Millisecond)
	obs.Observe(ctx, deny("k6", false))
	obs.Observe(ctx, deny("k7", false))
	obs.Observe(ctx, deny("k8", false))
	clock.Advance(time.Second)
	obs.Observe(ctx, deny("k9", false))
	equalLines(t, buf.String(),
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<K0> cost=1 retry_after=1s`,
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<K1> cost=1 retry_after=1s`,
		`level=INFO msg="rate limit: would refuse (shadow mode, admitted)" outcome=denied transport=http limit=api key=<S0> cost=1 retry_after=1s shadow=true`,
		`level=INFO msg="rate limit: request has no usable key" outcome=bad_key transport=http`,
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<K6> cost=1 retry_after=1s suppressed=4`,
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<K7> cost=1 retry_after=1s`,
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=api key=<K9> cost=1 retry_after=1s suppressed=1`,
	)
}

// TestWithoutSampling: WithMaxPerSecond(0) writes every line.
func TestWithoutSampling(t *testing.T) {
	t.Parallel()
	obs, buf, _ := newObserver(t, slog.LevelInfo, slogobs.WithMaxPerSecond(0))
	for range 100 {
		obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeBadKey})
	}
	if n := len(lines(buf.String())); n != 100 {
		t.Errorf("%d lines, want 100", n)
	}
}

// TestDefaultRedaction: the salted hash gives one token per key, hides
// the key (in the error text too) and differs from one Observer to the
// next; a redaction that returns the key shows it.
func TestDefaultRedaction(t *testing.T) {
	t.Parallel()
	const key = "198.51.100.23"
	tokens := func(opts ...slogobs.Option) []string {
		logger, buf := textLogger(slog.LevelInfo)
		obs, err := slogobs.New(logger, append(opts, slogobs.WithMaxPerSecond(0))...)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{key, key, "198.51.100.24"} {
			obs.Observe(context.Background(), core.Event{Transport: "http", Outcome: core.OutcomeError, Key: k, Err: errors.New("no tenant for " + k)})
		}
		var out []string
		for _, l := range lines(buf.String()) {
			_, rest, _ := strings.Cut(l, " key=")
			tok, errText, _ := strings.Cut(rest, " error=")
			if errText != `"no tenant for `+tok+`"` {
				t.Errorf("error text %s does not show the key as %s", errText, tok)
			}
			out = append(out, tok)
		}
		return out
	}
	a, b := tokens(), tokens()
	if a[0] != a[1] || a[0] == a[2] || a[0] == b[0] || len(a[0]) != len("h:")+16 || !strings.HasPrefix(a[0], "h:") {
		t.Errorf("tokens %q and %q: want one per key, 16 hex digits, and another salt for the second Observer", a, b)
	}
	for _, tok := range append(a, b...) {
		if strings.Contains(tok, "198.51") {
			t.Errorf("token %q shows the key", tok)
		}
	}
	if raw := tokens(slogobs.WithKeyRedaction(func(k string) string { return k })); raw[0] != key {
		t.Errorf("raw key shown as %q", raw[0])
	}
}

// TestHTTPEndToEnd: a refusal through a real httpmw middleware is logged.
func TestHTTPEndToEnd(t *testing.T) {
	t.Parallel()
	obs, buf, _ := newObserver(t, slog.LevelInfo)
	lim, err := core.New(core.PerMinute(1).WithName("per-client"), core.WithClock(coretest.NewClock(t0)))
	if err != nil {
		t.Fatal(err)
	}
	h := httpmw.MustNew(lim, keyfunc.Header("X-Client"), httpmw.WithObserver(obs)).Handler(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	for range 2 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-Client", "alice")
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	equalLines(t, buf.String(),
		`level=INFO msg="rate limit: refused" outcome=denied transport=http limit=per-client key=<ALICE> cost=1 retry_after=1m0s`)
}

// TestConcurrent: under concurrent refusals, the sampler writes exactly
// its quota in a second and reports every dropped line once.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	obs, buf, clock := newObserver(t, slog.LevelInfo, slogobs.WithMaxPerSecond(5))
	e := core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: "k", Cost: 1, Decision: core.Decision{Limit: api}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				obs.Observe(context.Background(), e)
			}
		})
	}
	wg.Wait()
	if n := len(lines(buf.String())); n != 5 {
		t.Fatalf("%d lines in one second, want 5", n)
	}
	clock.Advance(time.Second)
	obs.Observe(context.Background(), e)
	all := lines(buf.String())
	if last := all[len(all)-1]; !strings.HasSuffix(last, " suppressed=795") {
		t.Errorf("last line %s, want suppressed=795", last)
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name   string
		logger *slog.Logger
		opts   []slogobs.Option
		want   string
	}{
		{"nil logger", nil, nil, "slogobs: nil logger; pass slog.Default()"},
		{"nil option", logger, []slogobs.Option{nil}, "slogobs: nil Option (argument 1)"},
		{"rate", logger, []slogobs.Option{slogobs.WithMaxPerSecond(-1)}, "slogobs: WithMaxPerSecond(-1): want the lines a second, or 0"},
		{"redaction", logger, []slogobs.Option{slogobs.WithKeyRedaction(nil)}, "slogobs: WithKeyRedaction(nil)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := slogobs.New(tc.logger, tc.opts...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || obs != nil {
				t.Fatalf("got %v, %v; want an error starting %q", obs, err, tc.want)
			}
		})
	}
}

// TestUnknownOutcome: an outcome newer than this package is logged at
// Error, under its String, sampled apart from the others.
func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	obs, buf, _ := newObserver(t, slog.LevelInfo, slogobs.WithMaxPerSecond(1))
	for range 2 {
		obs.Observe(context.Background(), core.Event{Transport: "grpc", Outcome: core.OutcomeCanceled + 2})
	}
	obs.Observe(context.Background(), core.Event{Transport: "grpc", Outcome: core.OutcomeBadKey})
	equalLines(t, buf.String(),
		`level=ERROR msg="rate limit: Outcome(9)" outcome=Outcome(9) transport=grpc`,
		`level=INFO msg="rate limit: request has no usable key" outcome=bad_key transport=grpc`)
}

// TestNoAllocsWhenDropped: an event that is not logged, or that the
// sampler drops, allocates nothing.
func TestNoAllocsWhenDropped(t *testing.T) {
	obs, _, _ := newObserver(t, slog.LevelInfo, slogobs.WithMaxPerSecond(1))
	deny := core.Event{Transport: "http", Outcome: core.OutcomeDenied, Key: "alice", Cost: 1, Decision: core.Decision{Limit: api}}
	obs.Observe(context.Background(), deny) // the second's one line
	for _, e := range []core.Event{deny, {Transport: "http", Outcome: core.OutcomeAllowed, Key: "alice"}} {
		if n := testing.AllocsPerRun(100, func() { obs.Observe(context.Background(), e) }); n != 0 {
			t.Errorf("%v: %v allocations", e.Outcome, n)
		}
	}
}
