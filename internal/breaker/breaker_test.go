package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/coretest"
)

var errDown = errors.New("connection refused")

// rig is a breaker on a frozen clock, at T0 (a whole 10 s, so that its
// buckets start where the tests expect), that records what its hooks are
// told, as "failed" and "from>to".
type rig struct {
	*breaker.Breaker
	clock *coretest.Clock
	mu    sync.Mutex
	log   []string
}

// config is the rule of most tests: 10 s in buckets of 1 s, 20 calls, 50 %.
func config(openFor, maxOpenFor time.Duration) breaker.Config {
	return breaker.Config{Rule: breaker.Rule{Window: 10 * time.Second, MinCalls: 20, FailureRate: 50, OpenFor: openFor, MaxOpenFor: maxOpenFor}}
}

// one is a rule that any failure trips, with no success in the window.
func one(openFor, maxOpenFor time.Duration) breaker.Config {
	c := config(openFor, maxOpenFor)
	c.MinCalls = 1
	return c
}

func newRig(t *testing.T, c breaker.Config) *rig {
	t.Helper()
	r := &rig{clock: coretest.NewClock(coretest.T0)}
	c.Clock = r.clock
	c.OnFailure = func(error) { r.record("failed") }
	c.OnStateChange = func(from, to breaker.State) { r.record(from.String() + ">" + to.String()) }
	b, err := breaker.New(c)
	if err != nil {
		t.Fatal(err)
	}
	r.Breaker = b
	return r
}

func (r *rig) record(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *rig) events() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, " ")
}

// report reports n outcomes from callers that found the breaker closed:
// successes ("ok"), failures ("fail") or inconclusive ones ("none").
func (r *rig) report(t *testing.T, what string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if !r.Closed() {
			t.Fatalf("%s %d of %d: the breaker is %v", what, i+1, n, r.State())
		}
		switch what {
		case "ok":
			r.Success(false)
		case "fail":
			r.Failure(errDown, false)
		case "none":
			r.Inconclusive(false)
		default:
			t.Fatalf("unknown outcome %q", what)
		}
	}
}

// opensAt reports failures until the breaker opens, and checks that it
// opened at exactly the n-th.
func (r *rig) opensAt(t *testing.T, n int) {
	t.Helper()
	r.report(t, "fail", n-1)
	r.Failure(errDown, false)
	if r.Closed() || r.State() != breaker.Open {
		t.Fatalf("after %d failures: %v, want open", n, r.State())
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(coretest.T0)
	valid := config(time.Second, time.Second)
	valid.Clock = clock
	with := func(f func(c *breaker.Config)) breaker.Config {
		c := valid
		f(&c)
		return c
	}
	for _, tt := range []struct {
		c    breaker.Config
		want []string
	}{
		{with(func(c *breaker.Config) { c.Window = 9 * time.Millisecond }), []string{"Window must be at least 10ms, got 9ms"}},
		{with(func(c *breaker.Config) { c.MinCalls = 0 }), []string{"MinCalls must be from 1 to 1073741824, got 0"}},
		{with(func(c *breaker.Config) { c.MinCalls = 1<<30 + 1 }), []string{"MinCalls must be"}},
		{with(func(c *breaker.Config) { c.FailureRate = 0 }), []string{"FailureRate must be from 1 to 100 (percent), got 0"}},
		{with(func(c *breaker.Config) { c.FailureRate = 101 }), []string{"got 101"}},
		{with(func(c *breaker.Config) { c.OpenFor = 0 }), []string{"OpenFor must be > 0, got 0s"}},
		{with(func(c *breaker.Config) { c.OpenFor = time.Minute }), []string{"MaxOpenFor 1s is shorter than OpenFor 1m0s; raise it"}},
		{with(func(c *breaker.Config) { c.Clock = nil }), []string{"nil clock"}},
		{breaker.Config{}, []string{"Window", "MinCalls", "FailureRate", "OpenFor must", "nil clock"}},
	} {
		b, err := breaker.New(tt.c)
		if err == nil || b != nil {
			t.Errorf("New(%+v) = %v, %v; want an error", tt.c, b, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "breaker: ") {
				t.Errorf("New(%+v): error %q does not say %q", tt.c, err, w)
			}
		}
	}
	for _, c := range []breaker.Config{
		valid,
		with(func(c *breaker.Config) { c.Window, c.MinCalls, c.FailureRate = breaker.MinWindow, 1, 1 }),
		with(func(c *breaker.Config) { c.MinCalls, c.FailureRate = breaker.MaxMinCalls, 100 }),
	} {
		if _, err := breaker.New(c); err != nil {
			t.Errorf("New(%+v): %v", c, err)
		}
	}
}

// TestMinCalls: below the minimum number of calls, nothing opens the
// breaker, not even failures only; it opens at the minimum. Inconclusive
// outcomes count for nothing.
func TestMinCalls(t *testing.T) {
	t.Parallel()
	for _, min := range []int{1, 2, 20, 100} {
		t.Run(fmt.Sprint(min), func(t *testing.T) {
			t.Parallel()
			c := config(time.Second, time.Second)
			c.MinCalls = min
			r := newRig(t, c)
			r.report(t, "none", 1000)
			r.opensAt(t, min)
			if got, want := r.events(), strings.Repeat("failed ", min)+"closed>open"; got != want {
				t.Errorf("events %q, want %q", got, want)
			}
			if r.Failures() != uint64(min) || r.Opens() != 1 {
				t.Errorf("Failures %d, Opens %d; want %d, 1", r.Failures(), r.Opens(), min)
			}
		})
	}
}

// TestFailureRate: with enough calls, the breaker opens at exactly the
// failure that brings the window's share of failures to the rate, in
// whatever order the outcomes came.
func TestFailureRate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		rate, min int
		ok        int // successes first
		opensAt   int // then failures: the one that opens
	}{
		{"half of 60", 50, 20, 30, 30},
		{"half, the minimum reached by failures", 50, 20, 5, 15},
		{"a quarter", 25, 20, 30, 10},
		{"one percent", 1, 20, 990, 10},
		{"all: never with a success in the window", 100, 1, 0, 1},
		{"90 percent of 20", 90, 20, 2, 18},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := config(time.Second, time.Second)
			c.FailureRate, c.MinCalls = tt.rate, tt.min
			r := newRig(t, c)
			r.report(t, "ok", tt.ok)
			r.opensAt(t, tt.opensAt)
		})
	}
	// Interleaved: 1 failure in 3 never reaches 50 %; then failures only
	// reach it when they equal the successes.
	r := newRig(t, config(time.Second, time.Second))
	for range 100 {
		r.report(t, "ok", 2)
		r.report(t, "fail", 1)
	}
	r.opensAt(t, 100)
	r2 := newRig(t, func() breaker.Config { c := config(time.Second, time.Second); c.FailureRate = 100; return c }())
	r2.report(t, "ok", 1)
	r2.report(t, "fail", 10000) // one success in the window holds a 100 % rule
}

// TestBucketsAgeOut: outcomes leave the window a bucket (a tenth of it)
// at a time, on the clock alone.
func TestBucketsAgeOut(t *testing.T) {
	t.Parallel()
	r := newRig(t, config(time.Second, time.Second))
	r.report(t, "ok", 100) // bucket 0, [0 s, 1 s)
	r.clock.Advance(5 * time.Second)
	r.report(t, "fail", 20) // bucket 5: 20 of 120
	r.clock.Advance(4*time.Second + 999*time.Millisecond)
	r.report(t, "fail", 1) // 9.999 s: bucket 9, the successes still count
	r.clock.Advance(time.Millisecond)
	// 10 s: bucket 0 has left, and this failure makes 22 of 22 calls.
	// (The previous bucket, 9, holds one failure and no success, but with
	// this one they are 2, short of the 20 the other rule needs.)
	r.Failure(errDown, false)
	if r.State() != breaker.Open {
		t.Fatalf("the successes aged out: %v, want open", r.State())
	}

	// A whole window later, nothing is left: the failures of an old
	// window do not add to a new one's.
	r2 := newRig(t, config(time.Second, time.Second))
	r2.report(t, "fail", 19)
	r2.clock.Advance(10 * time.Second)
	r2.opensAt(t, 20)
}

// TestEveryCallFails: failures and no success over the previous bucket
// and the current one open the breaker at the third failure, however many
// successes the rest of the window holds; failures in one bucket alone, as
// a pause of the process gives, or with a success among them, do not.
func TestEveryCallFails(t *testing.T) {
	t.Parallel()
	history := func(t *testing.T) *rig {
		t.Helper()
		r := newRig(t, config(time.Second, time.Second))
		for range 8 { // buckets 0 to 7: 1000 successes each
			r.report(t, "ok", 1000)
			r.clock.Advance(time.Second)
		}
		return r
	}
	t.Run("two buckets of failures", func(t *testing.T) {
		t.Parallel()
		r := history(t)
		r.report(t, "fail", 2)
		r.clock.Advance(time.Second)
		r.opensAt(t, 1)
	})
	t.Run("the previous bucket has one failure", func(t *testing.T) {
		t.Parallel()
		r := history(t)
		r.clock.Advance(time.Second - time.Nanosecond)
		r.report(t, "fail", 1)
		r.clock.Advance(time.Nanosecond)
		r.opensAt(t, 2)
	})
	t.Run("one bucket of failures", func(t *testing.T) {
		t.Parallel()
		r := history(t)
		r.clock.Advance(time.Second) // bucket 8 is empty
		r.report(t, "fail", 5000)    // 5000 of 13000: below 50 %
	})
	t.Run("a success in the previous bucket", func(t *testing.T) {
		t.Parallel()
		r := history(t)
		r.report(t, "fail", 10)
		r.report(t, "ok", 1)
		r.report(t, "fail", 10)
		r.clock.Advance(time.Second)
		r.report(t, "fail", 1000)
	})
	t.Run("a success in the current bucket", func(t *testing.T) {
		t.Parallel()
		r := history(t)
		r.clock.Advance(time.Second) // bucket 8 is empty
		r.report(t, "fail", 10)
		r.report(t, "ok", 1)
		r.report(t, "fail", 1000)
		r.clock.Advance(time.Second)
		r.report(t, "fail", 1) // the previous bucket holds a success
		r.clock.Advance(time.Second)
		r.opensAt(t, 2) // now it holds a failure and no success
	})
}

// TestProbe: a successful probe closes the breaker and starts the window
// afresh, so that the failures that opened it count no more; a failed one
// opens it again.
func TestProbe(t *testing.T) {
	t.Parallel()
	r := newRig(t, config(time.Second, 4*time.Second))
	r.opensAt(t, 20)
	r.clock.Advance(time.Second)
	if !r.TryProbe() {
		t.Fatal("no probe at the end of the open period")
	}
	r.Success(true)
	if !r.Closed() {
		t.Fatalf("after a successful probe: %v", r.State())
	}
	r.opensAt(t, 20) // not at the first failure: the window starts afresh
	r.clock.Advance(time.Second)
	if !r.TryProbe() {
		t.Fatal("no probe at the end of the second open period")
	}
	r.Failure(errDown, true)
	if r.State() != breaker.Open || r.TryProbe() {
		t.Fatalf("after a failed probe: %v, want open", r.State())
	}
	want := strings.Repeat("failed ", 20) + "closed>open open>half-open half-open>closed " +
		strings.Repeat("failed ", 20) + "closed>open open>half-open failed half-open>open"
	if got := r.events(); got != want {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	if r.Opens() != 3 || r.Failures() != 41 {
		t.Errorf("Opens %d, Failures %d; want 3, 41", r.Opens(), r.Failures())
	}
}

// TestOutcomesWhileOpen: outcomes of calls made before the breaker opened,
// reported while it is open, neither close it nor open it again.
func TestOutcomesWhileOpen(t *testing.T) {
	t.Parallel()
	r := newRig(t, config(time.Second, time.Second))
	r.opensAt(t, 20)
	for range 100 {
		r.Success(false)
		r.Failure(errDown, false)
		r.Inconclusive(false)
	}
	if r.State() != breaker.Open || r.Opens() != 1 {
		t.Fatalf("%v after %d opens; want open, once", r.State(), r.Opens())
	}
}

// TestBackoff: on the clock alone, each failed probe doubles the open
// period up to the cap, and a successful one starts over from the first.
func TestBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t, one(time.Second, 10*time.Second))
	r.opensAt(t, 1)
	for i, period := range []time.Duration{1, 2, 4, 8, 10, 10, 10} {
		period *= time.Second
		r.clock.Advance(period - time.Nanosecond)
		if r.State() != breaker.Open || r.TryProbe() {
			t.Fatalf("period %d (%v): %v and a probe 1 ns before its end, want open", i, period, r.State())
		}
		r.clock.Advance(time.Nanosecond)
		if r.State() != breaker.HalfOpen {
			t.Fatalf("period %d (%v): %v at its end, want half-open", i, period, r.State())
		}
		if !r.TryProbe() {
			t.Fatalf("period %d: no probe at its end", i)
		}
		r.Failure(errDown, true)
	}
	r.clock.Advance(10 * time.Second)
	if !r.TryProbe() {
		t.Fatal("no probe after the capped period")
	}
	r.Success(true)
	if !r.Closed() || r.State() != breaker.Closed {
		t.Fatalf("after a successful probe: %v, want closed", r.State())
	}
	r.opensAt(t, 1)
	r.clock.Advance(time.Second - time.Nanosecond)
	if r.TryProbe() {
		t.Fatal("probe before the first period ended, after starting over")
	}
	r.clock.Advance(time.Nanosecond)
	if !r.TryProbe() {
		t.Fatal("no probe 1 s after opening again: the period did not start over")
	}
	if r.Opens() != 9 {
		t.Errorf("Opens = %d, want 9", r.Opens())
	}
}

// TestProbeHandedOn: an inconclusive probe goes to the next caller, at
// once, without a new open period; reporting it twice changes nothing.
func TestProbeHandedOn(t *testing.T) {
	t.Parallel()
	r := newRig(t, one(time.Second, 10*time.Second))
	r.opensAt(t, 1)
	r.clock.Advance(time.Second)
	if !r.TryProbe() || r.TryProbe() {
		t.Fatal("want exactly one probe")
	}
	r.Inconclusive(true)
	if r.State() != breaker.HalfOpen || !r.TryProbe() || r.TryProbe() {
		t.Fatal("a handed-on probe is not taken exactly once by the next callers")
	}
	r.Success(true)
	r.Inconclusive(true) // a deferred guard after the outcome was reported
	if !r.Closed() {
		t.Fatalf("Inconclusive after Success: %v, want closed", r.State())
	}
	want := "failed closed>open open>half-open half-open>closed"
	if got := r.events(); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestExactlyOneProbe: many callers at the end of the open period, all at
// once: one gets the probe, the others are turned away while it is out,
// round after round.
func TestExactlyOneProbe(t *testing.T) {
	t.Parallel()
	r := newRig(t, one(time.Second, time.Second))
	r.opensAt(t, 1)
	const callers = 64
	for round := 0; round < 20; round++ {
		r.clock.Advance(time.Second)
		var probes atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < callers; g++ {
			wg.Go(func() {
				<-start
				for i := 0; i < 10; i++ {
					if !r.Closed() && r.TryProbe() {
						probes.Add(1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		if n := probes.Load(); n != 1 {
			t.Fatalf("round %d: %d probes, want 1", round, n)
		}
		if round == 19 {
			r.Success(true)
		} else {
			r.Failure(errDown, true)
		}
	}
	if !r.Closed() {
		t.Errorf("after the last probe succeeded: %v", r.State())
	}
}

// TestConcurrent: calls from many goroutines while the dependency flaps
// and the clock moves, for the race detector: at no time is more than one
// probe out, and the breaker opens and closes again.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	c := config(time.Millisecond, 4*time.Millisecond)
	c.Window, c.MinCalls = 20*time.Millisecond, 3
	r := newRig(t, c)
	// The dependency is down for 5 ms out of every 10 of the clock, which
	// every goroutine moves on a little.
	down := func() bool { return r.clock.Now()/int64(5*time.Millisecond)%2 == 0 }
	var out atomic.Int64
	var twoProbes atomic.Bool
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 8000; i++ {
				if i%16 == 0 {
					r.clock.Advance(10 * time.Microsecond)
				}
				probe := false
				if !r.Closed() {
					if !r.TryProbe() {
						_ = r.State()
						continue
					}
					probe = true
					if out.Add(1) > 1 {
						twoProbes.Store(true)
					}
				}
				// A probe is out from TryProbe until its report: count it
				// back before reporting, since the report may let another
				// goroutine's probe out at once (closed, reopened by
				// others' failures, half-open again).
				if probe {
					out.Add(-1)
				}
				switch {
				case i%17 == 0:
					r.Inconclusive(probe)
				case down():
					r.Failure(errDown, probe)
				default:
					r.Success(probe)
				}
			}
		})
	}
	wg.Wait()
	if twoProbes.Load() {
		t.Error("two probes out at once, want at most 1")
	}
	if r.Opens() == 0 || r.Failures() == 0 {
		t.Errorf("Opens %d, Failures %d: the flapping dependency never opened the breaker", r.Opens(), r.Failures())
	}
	if !strings.Contains(r.events(), "half-open>closed") {
		t.Error("the breaker never closed again after a probe")
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	for s, want := range map[breaker.State]string{
		breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half-open", 9: "State(9)",
	} {
		if got := fmt.Sprint(s); got != want {
			t.Errorf("%d: %q, want %q", s, got, want)
		}
	}
}

// TestClosedPathAllocatesNothing: a call through a Closed breaker, entered
// and reported, allocates nothing.
func TestClosedPathAllocatesNothing(t *testing.T) {
	r := newRig(t, config(time.Second, time.Second))
	if n := testing.AllocsPerRun(100, func() {
		if r.Closed() {
			r.Success(false)
		}
	}); n != 0 {
		t.Errorf("closed path allocates %v times per call, want 0", n)
	}
}

// TestBound: no timer when the caller's deadline comes first or d is 0,
// else a context that ends after d.
func TestBound(t *testing.T) {
	t.Parallel()
	ctx, cancel := breaker.Bound(context.Background(), 0)
	if cancel != nil || ctx != context.Background() {
		t.Error("d = 0: want the caller's context and no cancel")
	}
	soon, stop := context.WithTimeout(context.Background(), time.Millisecond)
	defer stop()
	if ctx, cancel := breaker.Bound(soon, time.Hour); cancel != nil || ctx != soon {
		t.Error("the caller's deadline comes first: want its context and no cancel")
	}
	ctx, cancel = breaker.Bound(context.Background(), time.Hour)
	if cancel == nil {
		t.Fatal("no deadline: want a bounded context")
	}
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > time.Hour {
		t.Errorf("deadline %v %v, want within an hour", dl, ok)
	}
}

// TestRuleOr: zero fields take the defaults; a zero MaxOpenFor takes the
// default's or the open period, whichever is longer.
func TestRuleOr(t *testing.T) {
	t.Parallel()
	d := breaker.Rule{Window: 10 * time.Second, MinCalls: 20, FailureRate: 50, OpenFor: time.Second, MaxOpenFor: 4 * time.Second}
	for _, tt := range []struct{ r, want breaker.Rule }{
		{breaker.Rule{}, d},
		{breaker.Rule{MinCalls: 5}, breaker.Rule{Window: 10 * time.Second, MinCalls: 5, FailureRate: 50, OpenFor: time.Second, MaxOpenFor: 4 * time.Second}},
		{breaker.Rule{OpenFor: time.Minute}, breaker.Rule{Window: 10 * time.Second, MinCalls: 20, FailureRate: 50, OpenFor: time.Minute, MaxOpenFor: time.Minute}},
		{breaker.Rule{Window: time.Second, MinCalls: -1, FailureRate: 100, OpenFor: 2 * time.Second, MaxOpenFor: time.Second},
			breaker.Rule{Window: time.Second, MinCalls: -1, FailureRate: 100, OpenFor: 2 * time.Second, MaxOpenFor: time.Second}},
	} {
		if got := tt.r.Or(d); got != tt.want {
			t.Errorf("%+v.Or(defaults) = %+v, want %+v", tt.r, got, tt.want)
		}
	}
}
