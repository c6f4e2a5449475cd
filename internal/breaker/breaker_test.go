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

	"github.com/floodgate/floodgate/core/coretest"
	"github.com/floodgate/floodgate/internal/breaker"
)

var errDown = errors.New("connection refused")

// rig is a breaker on a frozen clock that records what its hooks are told,
// as "failed" and "from>to".
type rig struct {
	*breaker.Breaker
	clock *coretest.Clock
	mu    sync.Mutex
	log   []string
}

func newRig(t *testing.T, threshold int, openFor, maxOpenFor time.Duration) *rig {
	t.Helper()
	r := &rig{clock: coretest.NewClock(coretest.T0)}
	b, err := breaker.New(breaker.Config{
		Threshold: threshold, OpenFor: openFor, MaxOpenFor: maxOpenFor, Clock: r.clock,
		OnFailure:     func(error) { r.record("failed") },
		OnStateChange: func(from, to breaker.State) { r.record(from.String() + ">" + to.String()) },
	})
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

// open reports threshold failures from a Closed breaker.
func (r *rig) open(t *testing.T, threshold int) {
	t.Helper()
	for i := 0; i < threshold; i++ {
		if !r.Closed() {
			t.Fatalf("open after %d of %d failures", i, threshold)
		}
		r.Failure(errDown, false)
	}
	if r.Closed() || r.State() != breaker.Open {
		t.Fatalf("after %d failures: %v, want open", threshold, r.State())
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(coretest.T0)
	for _, tt := range []struct {
		c    breaker.Config
		want []string
	}{
		{breaker.Config{Threshold: 0, OpenFor: time.Second, MaxOpenFor: time.Second, Clock: clock}, []string{"threshold must be >= 1, got 0"}},
		{breaker.Config{Threshold: 1, OpenFor: 0, MaxOpenFor: time.Second, Clock: clock}, []string{"open period must be > 0, got 0s"}},
		{breaker.Config{Threshold: 1, OpenFor: time.Minute, MaxOpenFor: time.Second, Clock: clock}, []string{"longest open period 1s is shorter than the open period 1m0s"}},
		{breaker.Config{Threshold: 1, OpenFor: time.Second, MaxOpenFor: time.Second}, []string{"nil clock"}},
		{breaker.Config{}, []string{"threshold", "open period must", "nil clock"}},
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
}

// TestThreshold: failures in a row open the breaker; a success in between
// starts the count over; calls whose outcome says nothing count for
// nothing.
func TestThreshold(t *testing.T) {
	t.Parallel()
	r := newRig(t, 3, time.Second, 10*time.Second)
	for i, step := range []string{"fail", "fail", "ok", "fail", "fail", "none", "none", "fail"} {
		if !r.Closed() {
			t.Fatalf("step %d (%s): breaker open", i, step)
		}
		switch step {
		case "fail":
			r.Failure(errDown, false)
		case "ok":
			r.Success(false)
		case "none":
			r.Inconclusive(false)
		}
	}
	if r.State() != breaker.Open || r.Closed() || r.TryProbe() {
		t.Fatalf("after 3 failures in a row: %v, want open and no probe", r.State())
	}
	if got, want := r.events(), "failed failed failed failed failed closed>open"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if r.Failures() != 5 || r.Opens() != 1 {
		t.Errorf("Failures %d, Opens %d; want 5, 1", r.Failures(), r.Opens())
	}
}

// TestBackoff: on the clock alone, each failed probe doubles the open
// period up to the cap, and a successful one starts over from the first.
func TestBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, time.Second, 10*time.Second)
	r.open(t, 1)
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
	r.open(t, 1)
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
	r := newRig(t, 2, time.Second, 10*time.Second)
	r.open(t, 2)
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
	want := "failed failed closed>open open>half-open half-open>closed"
	if got := r.events(); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestExactlyOneProbe: many callers at the end of the open period, all at
// once: one gets the probe, the others are turned away while it is out,
// round after round.
func TestExactlyOneProbe(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, time.Second, time.Second)
	r.open(t, 1)
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
	r := newRig(t, 3, time.Millisecond, 4*time.Millisecond)
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
	r := newRig(t, 3, time.Second, time.Second)
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
