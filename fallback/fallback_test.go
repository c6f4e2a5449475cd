package fallback_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
)

func TestNewErrors(t *testing.T) {
	t.Parallel()
	p, l := newFake(1), newFake(2)
	tests := []struct {
		name           string
		primary, local core.Limiter
		opts           []fallback.Option
		want           []string
	}{
		{"nil primary", nil, l, nil, []string{"fallback: primary limiter is nil"}},
		{"nil local", p, nil, nil, []string{"fallback: local limiter is nil"}},
		{"nil option", p, l, []fallback.Option{fallback.WithTimeout(time.Second), nil}, []string{"nil Option (argument 2)"}},
		{"zero timeout", p, l, []fallback.Option{fallback.WithTimeout(0)}, []string{"WithTimeout(0s): the timeout must be > 0"}},
		{"negative timeout", p, l, []fallback.Option{fallback.WithTimeout(-time.Second)}, []string{"WithTimeout(-1s)"}},
		{"negative window", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{Window: -time.Second})}, []string{"WithBreaker: Window must be at least 10ms, got -1s"}},
		{"short window", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{Window: time.Millisecond})}, []string{"Window must be at least 10ms, got 1ms"}},
		{"negative min calls", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{MinCalls: -1})}, []string{"WithBreaker: MinCalls must be from 1 to 1073741824, got -1"}},
		{"rate above 100", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{FailureRate: 101})}, []string{"WithBreaker: FailureRate must be from 1 to 100 (percent), got 101"}},
		{"negative open", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{OpenFor: -time.Second})}, []string{"WithBreaker: OpenFor must be > 0, got -1s"}},
		{"negative max open", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{MaxOpenFor: -time.Second})}, []string{"WithBreaker: MaxOpenFor -1s is shorter than OpenFor 1s"}},
		{"max below open", p, l, []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{OpenFor: time.Minute, MaxOpenFor: time.Second})},
			[]string{"WithBreaker: MaxOpenFor 1s is shorter than OpenFor 1m0s; raise it, or make them equal for no doubling"}},
		{"nil clock", p, l, []fallback.Option{fallback.WithClock(nil)}, []string{"WithClock(nil)"}},
		{"nil observer", p, l, []fallback.Option{fallback.WithObserver(nil)}, []string{"WithObserver(nil)"}},
		{"all reported", p, l, []fallback.Option{fallback.WithTimeout(0), fallback.WithBreaker(fallback.BreakerConfig{MinCalls: -1, FailureRate: -1})},
			[]string{"WithTimeout(0s)", "MinCalls must be", "FailureRate must be"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim, err := fallback.New(tt.primary, tt.local, tt.opts...)
			if err == nil || lim != nil {
				t.Fatalf("New = %v, %v; want an error", lim, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "fallback: ") {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			defer func() {
				if recover() == nil {
					t.Error("MustNew did not panic")
				}
			}()
			fallback.MustNew(tt.primary, tt.local, tt.opts...)
		})
	}
	// A long open period raises the default cap rather than failing.
	if _, err := fallback.New(p, l, fallback.WithBreaker(fallback.BreakerConfig{OpenFor: time.Minute})); err != nil {
		t.Errorf("OpenFor 1m alone: %v", err)
	}
}

// TestStoreErrorsOpenAtMinCalls: store errors with no success before
// them open the breaker at exactly MinCalls; until then each is answered
// locally and the breaker stays closed.
func TestStoreErrorsOpenAtMinCalls(t *testing.T) {
	t.Parallel()
	for _, min := range []int{1, 3, fallback.DefaultMinCalls} {
		t.Run(fmt.Sprint(min), func(t *testing.T) {
			t.Parallel()
			opts := []fallback.Option{fallback.WithBreaker(fallback.BreakerConfig{MinCalls: min})}
			if min == fallback.DefaultMinCalls {
				opts = nil
			}
			r := newRig(t, opts...)
			r.primary.set(storeDown)
			for i := 1; i <= min; i++ {
				if got := r.allow(t, t.Context()); got != "local" {
					t.Fatalf("failure %d answered by %s, want local", i, got)
				}
				want := fallback.Closed
				if i == min {
					want = fallback.Open
				}
				if s := r.State(); s != want {
					t.Fatalf("after %d failures: %v, want %v", i, s, want)
				}
			}
			for i := 0; i < 10; i++ {
				r.allow(t, t.Context())
			}
			r.wantCalls(t, int64(min), int64(min)+10)
			want := fallback.Stats{LocalDecisions: uint64(min) + 10, PrimaryFailures: uint64(min), Opens: 1}
			if s := r.Stats(); s != want {
				t.Errorf("Stats = %+v, want %+v", s, want)
			}
		})
	}
}

// TestFailureRate: calls to the primary in order, each answered by the
// side the breaker's counts say, the breaker opening at exactly the call
// that brings the failures to the rate.
func TestFailureRate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		c     fallback.BreakerConfig
		steps string // o: the primary answers, x: a store error, -: a bad cost
		opens int    // the step after which it is open; 0: never
	}{
		{"defaults: 20 calls, half failed", fallback.BreakerConfig{}, "oooooooooo" + "xxxxxxxxx" + "x", 20},
		{"defaults: one short of 20 calls", fallback.BreakerConfig{}, "ooooooooo" + "xxxxxxxxx" + "x", 0},
		{"4 calls, 50 %", fallback.BreakerConfig{MinCalls: 4}, "oooxxx", 6},
		{"4 calls, 75 %", fallback.BreakerConfig{MinCalls: 4, FailureRate: 75}, "oxoxxxxx", 8},
		{"bad costs count for nothing", fallback.BreakerConfig{MinCalls: 4}, "o----x----x", 0},
		{"bad costs, then failures", fallback.BreakerConfig{MinCalls: 4}, "o----x----xx", 12},
		{"100 %: a success holds it", fallback.BreakerConfig{MinCalls: 1, FailureRate: 100}, "oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fallback.WithBreaker(tt.c))
			for i, step := range tt.steps {
				want := "local"
				switch step {
				case 'o':
					r.primary.set(nil)
					want = "primary"
				case 'x':
					r.primary.set(storeDown)
				case '-':
					r.primary.set(fails(core.ErrInvalidCost))
					want = "error: " + core.ErrInvalidCost.Error()
				}
				if got := r.allow(t, t.Context()); got != want {
					t.Fatalf("step %d (%c): %s, want %s", i+1, step, got, want)
				}
				open := tt.opens != 0 && i+1 >= tt.opens
				if s := r.State(); (s == fallback.Open) != open {
					t.Fatalf("after step %d (%c): %v, want open %v", i+1, step, s, open)
				}
			}
		})
	}
}

func TestOpenNeverCallsPrimary(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.open(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 50; i++ {
				if d, err := r.Allow(context.Background(), "k", 1); err != nil || d.Remaining != 2 {
					t.Errorf("open: %+v, %v; want a local decision", d, err)
				}
				if err := r.Refund(context.Background(), "k", 1); err != nil {
					t.Errorf("open: Refund: %v", err)
				}
			}
		})
	}
	wg.Wait()
	r.clock.Advance(fallback.DefaultOpenFor - time.Nanosecond)
	r.allow(t, t.Context())
	if n := r.primary.allows.Load() + r.primary.refunds.Load(); n != fallback.DefaultMinCalls {
		t.Errorf("primary called %d times, want only the %d that opened the breaker", n, fallback.DefaultMinCalls)
	}
	r.clock.Advance(time.Nanosecond)
	if s := r.State(); s != fallback.HalfOpen {
		t.Errorf("after the open period: %v, want half-open", s)
	}
	if got := r.allow(t, t.Context()); got != "primary" {
		t.Errorf("first request after the open period: %s, want primary (the probe)", got)
	}
}

func TestHalfOpenLetsOneProbeThrough(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.open(t)
	entered, release := make(chan struct{}), make(chan struct{})
	r.primary.set(func(context.Context) error {
		close(entered) // a second call would panic
		<-release
		return nil
	})
	r.clock.Advance(fallback.DefaultOpenFor)
	const n = 64
	results := make(chan string, n)
	for g := 0; g < n; g++ {
		go func() { results <- r.allow(t, context.Background()) }()
	}
	// Everyone but the probe answers while the probe is still out.
	for i := 0; i < n-1; i++ {
		if got := <-results; got != "local" {
			t.Errorf("non-probe request: %s, want local", got)
		}
	}
	<-entered
	if s := r.State(); s != fallback.HalfOpen {
		t.Errorf("probe out: %v, want half-open", s)
	}
	close(release)
	if got := <-results; got != "primary" {
		t.Errorf("probe: %s, want primary", got)
	}
	r.wantCalls(t, fallback.DefaultMinCalls+1, fallback.DefaultMinCalls+n-1)
	if s := r.State(); s != fallback.Closed {
		t.Errorf("after a successful probe: %v, want closed", s)
	}
	want := []string{"closed>open", "open>half-open", "half-open>closed"}
	if got := r.rec.transitions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

func TestProbeOutcome(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		behave behaviour
		answer string
		state  fallback.State
	}{
		{"success closes", context.Background(), nil, "primary", fallback.Closed},
		{"store error reopens", context.Background(), storeDown, "local", fallback.Open},
		{"timeout reopens", context.Background(), hang, "local", fallback.Open},
		{"bad cost hands the probe on", context.Background(), fails(core.ErrInvalidCost), "error: " + core.ErrInvalidCost.Error(), fallback.HalfOpen},
		{"caller gone hands the probe on", canceled, hang, "error: " + context.Canceled.Error(), fallback.HalfOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fallback.WithTimeout(5*time.Millisecond))
			r.open(t)
			r.clock.Advance(fallback.DefaultOpenFor)
			r.primary.set(tt.behave)
			if got := r.allow(t, tt.ctx); got != tt.answer {
				t.Errorf("probe answered %s, want %s", got, tt.answer)
			}
			if s := r.State(); s != tt.state {
				t.Fatalf("after the probe: %v, want %v", s, tt.state)
			}
			switch tt.state {
			case fallback.Open: // for twice the first period
				r.clock.Advance(2*fallback.DefaultOpenFor - time.Nanosecond)
				if s := r.State(); s != fallback.Open {
					t.Errorf("2s less 1ns after a failed probe: %v, want open", s)
				}
			case fallback.HalfOpen: // the next request probes
				r.primary.set(nil)
				if got := r.allow(t, t.Context()); got != "primary" {
					t.Errorf("next request: %s, want primary", got)
				}
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.open(t)
	r.primary.set(storeDown)
	// Each failed probe doubles the open period, up to the cap of 4 s.
	for i, period := range []time.Duration{1, 2, 4, 4, 4} {
		period *= time.Second
		r.clock.Advance(period - time.Nanosecond)
		if s := r.State(); s != fallback.Open {
			t.Fatalf("period %d (%v): %v before its end, want open", i, period, s)
		}
		r.clock.Advance(time.Nanosecond)
		if got := r.allow(t, t.Context()); got != "local" {
			t.Fatalf("failed probe %d: %s, want local", i, got)
		}
	}
	// A success starts over from the first period.
	r.clock.Advance(fallback.DefaultMaxOpenFor)
	r.primary.set(nil)
	if got := r.allow(t, t.Context()); got != "primary" {
		t.Fatalf("probe: %s, want primary", got)
	}
	r.open(t)
	r.clock.Advance(fallback.DefaultOpenFor)
	if s := r.State(); s != fallback.HalfOpen {
		t.Errorf("1s after opening again: %v, want half-open", s)
	}
}

// TestProbePanics: a primary that panics during the probe hands the probe
// on, so that the breaker does not stay open for good.
func TestProbePanics(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.open(t)
	r.clock.Advance(fallback.DefaultOpenFor)
	r.primary.set(func(context.Context) error { panic("primary bug") })
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the primary's panic did not reach the caller")
			}
		}()
		r.allow(t, t.Context())
	}()
	r.primary.set(nil)
	if got := r.allow(t, t.Context()); got != "primary" || r.State() != fallback.Closed {
		t.Errorf("after a panicking probe: %s, %v; want the next request to probe and close", got, r.State())
	}
}
