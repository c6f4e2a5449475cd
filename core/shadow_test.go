package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestShadowNeverRefuses: a Shadow's own Allow admits every request, with
// no RetryAfter, no Delay and no error, whatever its limiter answers, and
// says in Would and WouldWait what enforcing would have done; it charges
// what enforcing would (a refusal nothing, a shaped request its units).
func TestShadowNeverRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	down := &core.StoreError{Op: "allow", Err: errors.New("redis: connection refused")}
	for _, tc := range []struct {
		name string
		// lim is the limiter in shadow mode; spend is called first.
		lim   func(clk *coretest.Clock) core.Limiter
		spend int
		cost  int
		would core.Outcome
		wait  time.Duration
		lease bool
		// then, called on the shadowed limiter afterwards, checks its state.
		then func(t *testing.T, lim core.Limiter, clk *coretest.Clock)
	}{
		{name: "allowed", lim: gcraPerMinute(1), cost: 1, would: core.OutcomeAllowed,
			then: func(t *testing.T, lim core.Limiter, _ *coretest.Clock) {
				mustRefuse(t, lim, "k") // the admission was charged
			}},
		{name: "exhausted", lim: gcraPerMinute(1), spend: 1, cost: 1, would: core.OutcomeDenied, wait: time.Minute,
			then: func(t *testing.T, lim core.Limiter, clk *coretest.Clock) {
				clk.Advance(time.Minute) // the refusal charged nothing
				mustAdmit(t, lim, "k")
			}},
		{name: "shaped", lim: func(clk *coretest.Clock) core.Limiter {
			return core.MustNew(core.PerSecond(1).WithAlgorithm(core.LeakyBucket).WithMaxDelay(time.Minute), core.WithClock(clk))
		}, spend: 1, cost: 1, would: core.OutcomeShaped, wait: time.Second,
			then: func(t *testing.T, lim core.Limiter, _ *coretest.Clock) {
				// The shaped request's turn stays reserved: the next one
				// queues behind it, as it would when enforced.
				if d, err := lim.Allow(ctx, "k", 1); err != nil || d.Delay != 2*time.Second {
					t.Errorf("next request: Delay %v (err %v), want 2s", d.Delay, err)
				}
			}},
		{name: "in flight", lim: func(clk *coretest.Clock) core.Limiter {
			return core.MustNew(core.InFlight(1).WithAlgorithm(core.Concurrency), core.WithClock(clk))
		}, cost: 1, would: core.OutcomeAllowed, lease: true,
			then: func(t *testing.T, lim core.Limiter, _ *coretest.Clock) {
				mustRefuse(t, lim, "k") // the shadow admission holds the slot
			}},
		{name: "cost beyond the burst", lim: gcraPerMinute(1), cost: 2, would: core.OutcomeBadCost,
			then: func(t *testing.T, lim core.Limiter, _ *coretest.Clock) { mustAdmit(t, lim, "k") }},
		{name: "store down", lim: func(*coretest.Clock) core.Limiter { return coretest.StoreDown(down) }, cost: 1, would: core.OutcomeStoreError},
		{name: "shadow of a shadow", lim: func(clk *coretest.Clock) core.Limiter {
			return &core.Shadow{Limiter: gcraPerMinute(1)(clk)}
		}, spend: 1, cost: 1, would: core.OutcomeDenied, wait: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := coretest.NewClock(t0)
			inner := tc.lim(clk)
			for range tc.spend {
				_, _ = inner.Allow(ctx, "k", 1)
			}
			s := &core.Shadow{Limiter: inner}
			d, err := s.Allow(ctx, "k", tc.cost)
			if err != nil || !d.Allowed || !d.Shadow || d.RetryAfter != 0 || d.Delay != 0 {
				t.Fatalf("Allow = %+v, %v; want a shadow admission with no wait and no error", d, err)
			}
			if d.Would != tc.would || d.WouldWait != tc.wait {
				t.Errorf("Would %v, WouldWait %v; want %v, %v", d.Would, d.WouldWait, tc.would, tc.wait)
			}
			if (d.Lease != nil) != tc.lease {
				t.Errorf("Lease %v, want one: %v", d.Lease, tc.lease)
			}
			if tc.then != nil {
				tc.then(t, inner, clk)
			}
			_ = d.Lease.Release(ctx)
		})
	}
}

// TestShadowReserve: a reservation on a shadow limit refunds on Cancel
// what its admission charged, and nothing for an admission that enforcing
// would have refused, which charged nothing.
func TestShadowReserve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := coretest.NewClock(t0)
	inner := core.MustNew(core.PerMinute(2).WithAlgorithm(core.GCRA), core.WithClock(clk))
	s := &core.Shadow{Limiter: inner}

	charged, d, err := core.Reserve(ctx, s, "k", 1)
	if err != nil || charged == nil || d.Would != core.OutcomeAllowed {
		t.Fatalf("first Reserve: %v, %+v, %v", charged, d, err)
	}
	mustAdmit(t, inner, "k") // the quota is spent now
	refused, d, err := core.Reserve(ctx, s, "k", 1)
	if err != nil || refused == nil || !d.Allowed || d.Would != core.OutcomeDenied {
		t.Fatalf("Reserve on the spent quota: %v, %+v, %v; want a reservation, Would denied", refused, d, err)
	}
	if err := refused.Cancel(ctx); err != nil || !refused.Cancelled() {
		t.Fatalf("Cancel: %v, cancelled %v", err, refused.Cancelled())
	}
	mustRefuse(t, inner, "k") // nothing was given back for it
	if err := charged.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	mustAdmit(t, inner, "k") // the charged unit was
	mustRefuse(t, inner, "k")
}

func gcraPerMinute(n int) func(clk *coretest.Clock) core.Limiter {
	return func(clk *coretest.Clock) core.Limiter {
		return core.MustNew(core.PerMinute(n).WithAlgorithm(core.GCRA), core.WithClock(clk))
	}
}

func mustAdmit(t *testing.T, lim core.Limiter, key string) {
	t.Helper()
	if d, err := lim.Allow(context.Background(), key, 1); err != nil || !d.Allowed {
		t.Fatalf("Allow(%q) = %+v, %v; want admitted", key, d, err)
	}
}

func mustRefuse(t *testing.T, lim core.Limiter, key string) {
	t.Helper()
	if d, err := lim.Allow(context.Background(), key, 1); err != nil || d.Allowed {
		t.Fatalf("Allow(%q) = %+v, %v; want refused", key, d, err)
	}
}
