package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// req is a test request: the key and cost the key and cost functions read.
type req struct {
	key     string
	keyErr  error
	cost    int
	costErr error
	skip    bool
}

// fixed answers every Allow with d and err, and records refunds.
type fixed struct {
	d       core.Decision
	err     error
	refunds int
}

func (f *fixed) Allow(context.Context, string, int) (core.Decision, error) { return f.d, f.err }
func (f *fixed) Refund(context.Context, string, int) error                 { f.refunds++; return nil }

func newPipeline(mode core.FailureMode, obs core.Observer) *pipeline.Pipeline[req] {
	return pipeline.New(config(mode, obs))
}

// newShadowPipeline is newPipeline in shadow mode.
func newShadowPipeline(mode core.FailureMode, obs core.Observer) *pipeline.Pipeline[req] {
	c := config(mode, obs)
	c.Shadow = true
	return pipeline.New(c)
}

func config(mode core.FailureMode, obs core.Observer) pipeline.Config[req] {
	return pipeline.Config[req]{
		Transport: "test",
		Key:       func(r req) (string, error) { return r.key, r.keyErr },
		Cost:      func(r req) (int, error) { return r.cost, r.costErr },
		Skip:      func(r req) bool { return r.skip },
		Failure:   mode,
		Observer:  obs,
	}
}

var (
	allow    = core.Decision{Allowed: true, Limit: core.PerSecond(1), ResetAfter: time.Second}
	deny     = core.Decision{Limit: core.PerSecond(1), RetryAfter: time.Second}
	storeErr = &core.StoreError{Op: "allow", Err: errors.New("down")}
)

func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		r        req
		lim      *fixed
		mode     core.FailureMode
		want     core.Outcome
		skipped  bool
		admitted bool
		errIs    []error
	}{
		{"allowed", req{key: "k", cost: 1}, &fixed{d: allow}, core.FailClosed, core.OutcomeAllowed, false, true, nil},
		{"denied", req{key: "k", cost: 1}, &fixed{d: deny}, core.FailClosed, core.OutcomeDenied, false, false, nil},
		{"skipped", req{skip: true}, &fixed{d: deny}, core.FailClosed, 0, true, true, nil},
		{"free", req{key: "k", cost: 0}, &fixed{d: deny}, core.FailClosed, 0, true, true, nil},
		{"missing key", req{keyErr: fmt.Errorf("header: %w", core.ErrBadKey)}, &fixed{d: allow}, core.FailOpen, core.OutcomeBadKey, false, false, []error{core.ErrKey, core.ErrBadKey}},
		{"oversize key", req{keyErr: fmt.Errorf("header: %w", core.ErrKeyTooLarge)}, &fixed{d: allow}, core.FailClosed, core.OutcomeBadKey, false, false, []error{core.ErrKey, core.ErrKeyTooLarge}},
		{"empty key", req{}, &fixed{d: allow}, core.FailClosed, core.OutcomeBadKey, false, false, []error{core.ErrEmptyKey, core.ErrBadKey}},
		{"key function fault", req{keyErr: errors.New("db")}, &fixed{d: allow}, core.FailOpen, core.OutcomeError, false, false, []error{core.ErrKey}},
		{"cost function fault", req{key: "k", costErr: errors.New("db")}, &fixed{d: allow}, core.FailOpen, core.OutcomeError, false, false, []error{core.ErrCost}},
		{"cost function: request malformed", req{key: "k", costErr: fmt.Errorf("x: %w", core.ErrInvalidCost)}, &fixed{d: allow}, core.FailClosed, core.OutcomeBadCost, false, false, []error{core.ErrCost, core.ErrInvalidCost}},
		{"negative cost", req{key: "k", cost: -1}, &fixed{d: allow}, core.FailClosed, core.OutcomeError, false, false, []error{core.ErrCost}},
		{"cost too large", req{key: "k", cost: 9}, &fixed{err: core.ErrCostTooLarge}, core.FailClosed, core.OutcomeBadCost, false, false, []error{core.ErrCostTooLarge}},
		{"store, closed", req{key: "k", cost: 1}, &fixed{err: storeErr}, core.FailClosed, core.OutcomeStoreError, false, false, []error{core.ErrStore}},
		{"store, open", req{key: "k", cost: 1}, &fixed{err: storeErr}, core.FailOpen, core.OutcomeStoreError, false, true, []error{core.ErrStore}},
		{"unclassified limiter error", req{key: "k", cost: 1}, &fixed{err: errors.New("?")}, core.FailOpen, core.OutcomeError, false, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []core.Event
			p := newPipeline(tc.mode, core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) }))
			var res pipeline.Result
			p.Run(context.Background(), tc.r, tc.lim, 0, &res)
			if res.Skipped != tc.skipped || res.Admitted() != tc.admitted {
				t.Fatalf("skipped %v admitted %v, want %v %v (%+v)", res.Skipped, res.Admitted(), tc.skipped, tc.admitted, res)
			}
			if tc.skipped {
				if len(events) != 0 {
					t.Errorf("skipped request observed: %+v", events)
				}
				return
			}
			if res.Outcome != tc.want {
				t.Errorf("outcome %v, want %v (err %v)", res.Outcome, tc.want, res.Err)
			}
			for _, target := range tc.errIs {
				if !errors.Is(res.Err, target) {
					t.Errorf("err %v does not match %v", res.Err, target)
				}
			}
			if len(events) != 1 {
				t.Fatalf("%d events, want 1", len(events))
			}
			e := events[0]
			if e.Outcome != tc.want || e.Admitted != tc.admitted || e.Transport != "test" || e.Failure != tc.mode ||
				e.Key != res.Key || e.Decision != res.Decision || !errors.Is(e.Err, res.Err) {
				t.Errorf("event %+v for result %+v", e, res)
			}
			if pipeline.Classify(res.Err) != tc.want && res.Err != nil {
				t.Errorf("Classify(%v) = %v, want %v", res.Err, pipeline.Classify(res.Err), tc.want)
			}
		})
	}
}

// TestFixedCost: a fixed cost replaces the cost function.
func TestFixedCost(t *testing.T) {
	t.Parallel()
	var asked int
	lim := core.MustNew(core.PerSecond(5), core.WithClock(coretest.NewClock(time.Unix(0, 0))))
	p := pipeline.New(pipeline.Config[req]{
		Key:  func(r req) (string, error) { return r.key, nil },
		Cost: func(req) (int, error) { asked++; return 1, nil },
	})
	var res pipeline.Result
	p.Run(context.Background(), req{key: "k"}, lim, 3, &res)
	if asked != 0 || res.Cost != 3 || res.Decision.Remaining != 2 {
		t.Errorf("asked %d, %+v", asked, res)
	}
}

// TestShapedWait: a shaped request waits its delay; if its context ends
// first, its units are refunded and it is OutcomeCanceled.
func TestShapedWait(t *testing.T) {
	t.Parallel()
	shaped := core.Decision{Allowed: true, Limit: core.PerSecond(1), Delay: time.Millisecond}
	lim := &fixed{d: shaped}
	p := newPipeline(core.FailClosed, nil)
	var res pipeline.Result
	if p.Run(context.Background(), req{key: "k", cost: 1}, lim, 0, &res); res.Outcome != core.OutcomeShaped || !res.Admitted() {
		t.Fatalf("%+v", res)
	}
	lim.d.Delay = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx, req{key: "k", cost: 1}, lim, 0, &res)
	if res.Outcome != core.OutcomeCanceled || res.Admitted() || !errors.Is(res.Err, core.ErrWaitCanceled) ||
		!errors.Is(res.Err, context.Canceled) || lim.refunds != 1 {
		t.Fatalf("%+v, %d refunds", res, lim.refunds)
	}
}

// TestNilObserverFree: the pipeline with no observer allocates nothing on
// an admitted request.
func TestNilObserverFree(t *testing.T) {
	lim := &fixed{d: allow}
	p := newPipeline(core.FailClosed, nil)
	r := req{key: "k", cost: 1}
	var res pipeline.Result
	if n := testing.AllocsPerRun(100, func() { p.Run(context.Background(), r, lim, 0, &res) }); n != 0 {
		t.Errorf("%v allocs per request", n)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	if err := pipeline.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pipeline.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a done context: %v", err)
	}
}

// TestShadow: in shadow mode (Config.Shadow) every request is admitted,
// whatever the decision, the failure mode or the error, a shaped one
// without waiting, and the observer hears what enforcing would have done.
func TestShadow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       req
		d       core.Decision
		err     error
		outcome core.Outcome
	}{
		{"allowed", req{key: "k", cost: 1}, core.Decision{Allowed: true}, nil, core.OutcomeAllowed},
		{"denied", req{key: "k", cost: 1}, core.Decision{RetryAfter: time.Second}, nil, core.OutcomeDenied},
		{"shaped", req{key: "k", cost: 1}, core.Decision{Allowed: true, Delay: time.Hour}, nil, core.OutcomeShaped},
		{"store error", req{key: "k", cost: 1}, core.Decision{}, &core.StoreError{Op: "allow", Err: errors.New("down")}, core.OutcomeStoreError},
		{"bad key", req{key: ""}, core.Decision{}, nil, core.OutcomeBadKey},
		{"cost function", req{key: "k", costErr: errors.New("boom")}, core.Decision{}, nil, core.OutcomeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []core.Event
			obs := core.ObserverFunc(func(_ context.Context, e core.Event) { got = append(got, e) })
			p := newShadowPipeline(core.FailClosed, obs)
			slept := 0
			pipeline.SetSleep(p, func(context.Context, time.Duration) error { slept++; return nil })
			lim := &fixed{d: tc.d, err: tc.err}
			var res pipeline.Result
			p.Run(context.Background(), tc.r, lim, 0, &res)
			if !res.Admitted() || !res.Shadow || res.Outcome != tc.outcome || slept != 0 {
				t.Fatalf("admitted=%v shadow=%v outcome=%v slept %d times; want admitted, shadow, %v, no wait",
					res.Admitted(), res.Shadow, res.Outcome, slept, tc.outcome)
			}
			if len(got) != 1 || !got[0].Shadow || !got[0].Admitted || got[0].Outcome != tc.outcome {
				t.Fatalf("observed %+v, want one shadow event, admitted, %v", got, tc.outcome)
			}
		})
	}
	// Without shadow mode the same store error is refused (FailClosed).
	p := newPipeline(core.FailClosed, nil)
	var res pipeline.Result
	p.Run(context.Background(), req{key: "k", cost: 1}, &fixed{err: &core.StoreError{Op: "allow", Err: errors.New("down")}}, 0, &res)
	if res.Admitted() || res.Shadow {
		t.Fatalf("enforced store error: admitted=%v shadow=%v", res.Admitted(), res.Shadow)
	}
}

// slow answers like fixed after the monotonic clock has moved by at least
// d, spinning rather than sleeping, so that the latency it causes has a
// known floor.
type slow struct {
	fixed
	d time.Duration
}

func (s *slow) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	for start := time.Now(); time.Since(start) < s.d; {
	}
	return s.fixed.Allow(ctx, key, cost)
}

// TestLatency: an observed request reports how long the limiter took,
// store errors included; one that never reached the limiter reports 0,
// and without an observer the clock is not read.
func TestLatency(t *testing.T) {
	t.Parallel()
	const d = time.Millisecond
	var events []core.Event
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
	p := newPipeline(core.FailOpen, obs)
	pipeline.TimeEvery(p)
	var res pipeline.Result
	p.Run(context.Background(), req{key: "k", cost: 1}, &slow{fixed{d: allow}, d}, 0, &res)
	p.Run(context.Background(), req{key: "k", cost: 1}, &slow{fixed{err: storeErr}, d}, 0, &res)
	p.Run(context.Background(), req{}, &slow{fixed{d: allow}, d}, 0, &res)
	if len(events) != 3 {
		t.Fatalf("%d events, want 3", len(events))
	}
	for i, want := range []core.Outcome{core.OutcomeAllowed, core.OutcomeStoreError} {
		if e := events[i]; e.Outcome != want || e.Latency < d || e.Latency > time.Minute {
			t.Errorf("event %d: outcome %v latency %v, want %v and at least %v", i, e.Outcome, e.Latency, want, d)
		}
	}
	if e := events[2]; e.Outcome != core.OutcomeBadKey || e.Latency != 0 {
		t.Errorf("bad key: outcome %v latency %v, want 0", e.Outcome, e.Latency)
	}
	p = newPipeline(core.FailOpen, nil)
	pipeline.TimeEvery(p)
	p.Run(context.Background(), req{key: "k", cost: 1}, &slow{fixed{d: allow}, d}, 0, &res)
	if res.Latency != 0 {
		t.Errorf("latency %v measured without an observer", res.Latency)
	}
}

// TestLatencySampled: by default about one observed request in
// TimingEvery is timed; 4000 requests time between 1/16 and 1/4 of them
// (the chance of falling outside is below 1e-30).
func TestLatencySampled(t *testing.T) {
	t.Parallel()
	timed := 0
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
		if e.Latency > 0 {
			timed++
		}
	})
	p := newPipeline(core.FailOpen, obs)
	var res pipeline.Result
	const n = 4000
	for range n {
		p.Run(context.Background(), req{key: "k", cost: 1}, &fixed{d: allow}, 0, &res)
	}
	if timed < n/16 || timed > n/4 {
		t.Errorf("%d of %d requests timed, want about 1 in %d", timed, n, pipeline.TimingEvery)
	}
}

// TestUndoEndsIgnored: undoing an admission that holds a lease ends it as
// ignored (the work was not done), so a limit that learns from latencies
// never counts it; End reads the ending from the request's context, and
// a client gone is measured (done).
func TestUndoEndsIgnored(t *testing.T) {
	var got []core.Ending
	lease := func() core.Lease {
		return core.NewLease(func(_ context.Context, e core.Ending) error { got = append(got, e); return nil })
	}
	if err := pipeline.Undo(context.Background(), nil, "k", 1, lease()); err != nil {
		t.Fatal(err)
	}
	late, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	gone, stop := context.WithCancel(context.Background())
	stop()
	pipeline.End(context.Background(), lease())
	pipeline.End(late, lease())
	pipeline.End(gone, lease())
	want := []core.Ending{core.EndIgnored, core.EndDone, core.EndDropped, core.EndDone}
	if !slices.Equal(got, want) {
		t.Fatalf("endings %v, want %v", got, want)
	}
}

// TestEndFree: End hands the request's context to the lease as it is,
// cancelled or not, with no allocation (the adapters call it once per
// request a concurrency limit admits); the holders keep a release from
// being stopped by it: NewLease's function runs under a context that is
// never cancelled.
func TestEndFree(t *testing.T) {
	gone, stop := context.WithCancel(context.Background())
	stop()
	lim := core.MustNew(core.InFlight(1))
	if n := testing.AllocsPerRun(1000, func() {
		d, _ := lim.Allow(gone, "k", 1)
		if !d.Allowed {
			t.Fatal("refused: the last End did not release")
		}
		pipeline.End(gone, d.Lease)
	}); n != 0 && !coretest.Race {
		t.Errorf("admission and End: %v allocations, want 0", n)
	}
	live := false
	pipeline.End(gone, core.NewLease(func(ctx context.Context, _ core.Ending) error { live = ctx.Err() == nil; return nil }))
	if !live {
		t.Error("NewLease's function ran under a cancelled context")
	}
}
