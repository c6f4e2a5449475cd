package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/coretest"
)

func TestNonStoreErrorsPassThrough(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		core.ErrInvalidCost,
		fmt.Errorf("redis limiter: cost 1000: %w", core.ErrCostTooLarge),
		core.ErrEmptyKey,
		core.ErrClockRange,
		errors.New("some bug"),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 1}))
			r.primary.set(fails(err))
			for i := 0; i < 3; i++ {
				if _, got := r.Allow(t.Context(), "k", 1); got != err {
					t.Fatalf("Allow: %v, want the primary's error unchanged", got)
				}
				if got := r.Refund(t.Context(), "k", 1); got != err {
					t.Fatalf("Refund: %v, want the primary's error unchanged", got)
				}
			}
			r.wantCalls(t, 3, 0)
			if s, st := r.State(), r.Stats(); s != fallback.Closed || st != (fallback.Stats{}) {
				t.Errorf("state %v, stats %+v; want closed and nothing counted", s, st)
			}
		})
	}
}

func TestCallerContextPassesThrough(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	storeCanceled := &core.StoreError{Op: "allow", Err: context.Canceled}
	tests := []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		behave behaviour
		want   error
	}{
		{"canceled", func() (context.Context, context.CancelFunc) { return canceled, func() {} },
			hang, context.Canceled},
		{"canceled, reported as a store error", func() (context.Context, context.CancelFunc) { return canceled, func() {} },
			fails(storeCanceled), storeCanceled},
		{"caller's deadline, shorter than the timeout, expires", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 2*time.Millisecond)
		}, hang, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 1}), fallback.WithTimeout(time.Minute))
			r.primary.set(tt.behave)
			ctx, cancel := tt.ctx()
			defer cancel()
			if _, err := r.Allow(ctx, "k", 1); err != tt.want {
				t.Errorf("Allow: %v, want %v unchanged", err, tt.want)
			}
			r.wantCalls(t, 1, 0)
			if s, st := r.State(), r.Stats(); s != fallback.Closed || st.PrimaryFailures != 0 {
				t.Errorf("state %v, stats %+v; want closed and no failure counted", s, st)
			}
		})
	}
}

func TestHangingPrimaryCutByTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Millisecond
	r := newRig(t, fallback.WithTimeout(timeout))
	var left atomic.Int64 // time to the deadline the primary saw
	r.primary.set(func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok {
			return errors.New("no deadline")
		}
		left.Store(int64(time.Until(dl)))
		return hang(ctx)
	})
	start := time.Now()
	if got := r.allow(t, context.Background()); got != "local" {
		t.Fatalf("hanging primary: %s, want local", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("answered after %v, with a %v timeout", took, timeout)
	}
	if l := time.Duration(left.Load()); l > timeout {
		t.Errorf("primary's deadline %v away, want within %v", l, timeout)
	}
	var failure fallback.Event
	for _, e := range r.rec.events {
		if e.Kind == fallback.EventPrimaryFailed {
			failure = e
		}
	}
	if !errors.Is(failure.Err, context.DeadlineExceeded) {
		t.Errorf("observer told of failure %+v, want the deadline", failure)
	}
	if st := r.Stats(); st.PrimaryFailures != 1 || st.LocalDecisions != 1 {
		t.Errorf("Stats = %+v, want one failure answered locally", st)
	}
}

func TestCallerDeadlineWins(t *testing.T) {
	t.Parallel()
	r := newRig(t, fallback.WithTimeout(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var seen atomic.Pointer[context.Context]
	r.primary.set(func(c context.Context) error { seen.Store(&c); return nil })
	r.allow(t, ctx)
	if got := seen.Load(); got == nil || *got != ctx {
		t.Error("the primary did not get the caller's context, whose deadline is the earlier")
	}
}

func TestDownAdmitsLocalBurstExactly(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	const burst = 50
	local := core.MustNew(core.PerSecond(10).WithBurst(burst), core.WithClock(clock))
	lim := fallback.MustNew(coretest.StoreDown(errDown), local, fallback.WithClock(clock))
	const goroutines, each = 16, 100
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				d, err := lim.Allow(context.Background(), "alice", 1)
				if err != nil {
					t.Errorf("Allow: %v; want a local decision", err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != burst {
		t.Errorf("admitted %d while the primary was down, want the local burst %d", n, burst)
	}
	st := lim.Stats()
	if st.LocalDecisions != goroutines*each || st.PrimaryDecisions != 0 || st.PrimaryFailures < fallback.DefaultMinCalls || st.Opens != 1 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestRefundGoesToDecidingSide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		setup                   func(t *testing.T, r *rig)
		primaryCalls, localCall int64
		failures                uint64
	}{
		{"closed", func(*testing.T, *rig) {}, 1, 0, 0},
		{"closed, primary's refund fails", func(_ *testing.T, r *rig) { r.primary.set(storeDown) }, 1, 1, 1},
		{"closed, primary's refund hangs", func(_ *testing.T, r *rig) { r.primary.set(hang) }, 1, 1, 1},
		{"open", func(t *testing.T, r *rig) { r.open(t) }, 0, 1, fallback.DefaultMinCalls},
		{"half-open, no probe taken", func(t *testing.T, r *rig) {
			r.open(t)
			r.clock.Advance(time.Hour)
		}, 0, 1, fallback.DefaultMinCalls},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fallback.WithTimeout(5*time.Millisecond))
			tt.setup(t, r)
			if err := r.Refund(context.Background(), "k", 1); err != nil {
				t.Fatalf("Refund: %v", err)
			}
			if p, l := r.primary.refunds.Load(), r.local.refunds.Load(); p != tt.primaryCalls || l != tt.localCall {
				t.Errorf("refunds: primary %d, local %d; want %d, %d", p, l, tt.primaryCalls, tt.localCall)
			}
			if f := r.Stats().PrimaryFailures; f != tt.failures {
				t.Errorf("PrimaryFailures = %d, want %d", f, tt.failures)
			}
		})
	}
}

// TestRefundRestoresQuota: with real limiters on both sides, a refund
// gives quota back on the side that charged, while the breaker holds.
func TestRefundRestoresQuota(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	mk := func() *core.Keyed { return core.MustNew(core.PerMinute(2), core.WithClock(clock)) }
	for _, down := range []bool{false, true} {
		var primary core.Limiter = mk()
		if down {
			primary = coretest.StoreDown(errDown)
		}
		lim := fallback.MustNew(primary, mk(), fallback.WithClock(clock), fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 1}))
		ctx := context.Background()
		lim.Allow(ctx, "k", 1)
		d, _ := lim.Allow(ctx, "k", 1)
		if err := lim.Refund(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
		if d2, _ := lim.Allow(ctx, "k", 1); d.Remaining != 0 || !d2.Allowed || d2.Remaining != 0 {
			t.Errorf("down=%v: before the refund %+v, after %+v; want the refunded unit spent again", down, d, d2)
		}
	}
}
