package fallback_test

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestShadowNeverRefuses: a Limiter whose primary or local limiter is an
// exhausted shadow limit, refusing or shaping, admits at once, with what
// enforcing would have done in the decision; a reservation of a would-be
// refusal gives nothing back on Cancel; and a shadow primary whose store
// fails is not a failure: the breaker stays closed and the enforcing local
// limiter is never asked.
func TestShadowNeverRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refusing := func(l core.Limit) core.Limit { return l.WithAlgorithm(core.GCRA) }
	shaping := func(l core.Limit) core.Limit { return l.WithMaxDelay(time.Hour) }
	for _, tc := range []struct {
		name    string
		set     func(core.Limit) core.Limit // the shadow limit's policy; nil: its store is down
		primary bool                        // the shadow limit is the primary (else the local, the primary down)
		would   core.Outcome
		wait    time.Duration
		side    fallback.Side
	}{
		{"primary refusing", refusing, true, core.OutcomeDenied, time.Minute, fallback.Primary},
		{"primary shaping", shaping, true, core.OutcomeShaped, time.Minute, fallback.Primary},
		{"primary down", nil, true, core.OutcomeStoreError, 0, fallback.Primary},
		{"local refusing", refusing, false, core.OutcomeDenied, time.Minute, fallback.Local},
		{"local shaping", shaping, false, core.OutcomeShaped, time.Minute, fallback.Local},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := coretest.NewClock(t0)
			var inner core.Limiter = coretest.StoreDown(&core.StoreError{Op: "allow", Err: errDown})
			if tc.set != nil {
				k, err := core.New(tc.set(core.PerMinute(1)), core.WithClock(clock))
				if err != nil {
					t.Fatal(err)
				}
				if d, err := k.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Delay != 0 {
					t.Fatalf("spending the quota: %+v, %v", d, err)
				}
				inner = k
			}
			shadow := &core.Shadow{Limiter: inner}
			other := newFake(5)
			primary, local := core.Limiter(shadow), core.Limiter(other)
			if !tc.primary {
				other.set(storeDown)
				primary, local = other, shadow
			}
			var sides []fallback.Side
			l, err := fallback.New(primary, local, fallback.WithClock(clock), fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 1}),
				fallback.WithObserver(func(e fallback.Event) {
					if e.Kind == fallback.EventDecided {
						sides = append(sides, e.Side)
					}
				}))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				r, d, err := core.Reserve(ctx, l, "k", 1)
				if err != nil || r == nil || !d.Allowed || !d.Shadow || d.RetryAfter != 0 || d.Delay != 0 {
					t.Fatalf("call %d: %v, %+v, %v; want a shadow admission, no wait", i, r, d, err)
				}
				if d.Would != tc.would || i == 0 && d.WouldWait != tc.wait {
					t.Errorf("call %d: Would %v, WouldWait %v; want %v, %v", i, d.Would, d.WouldWait, tc.would, tc.wait)
				}
				if tc.would == core.OutcomeDenied {
					if err := r.Cancel(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.would == core.OutcomeDenied {
				// Nothing was refunded for the would-be refusals: a minute
				// brings back the one unit spent, no more.
				clock.Advance(time.Minute)
				if d, _ := inner.Allow(ctx, "k", 1); !d.Allowed {
					t.Errorf("after a minute: %+v, want admitted", d)
				}
				if d, _ := inner.Allow(ctx, "k", 1); d.Allowed {
					t.Errorf("then: %+v, want refused (units were refunded that were never charged)", d)
				}
			}
			if len(sides) != 3 || sides[0] != tc.side || sides[2] != tc.side {
				t.Errorf("decided by %v, want %v each time", sides, tc.side)
			}
			if tc.primary && (other.allows.Load() != 0 || l.State() != fallback.Closed) {
				t.Errorf("local asked %d times, breaker %v; want never, closed", other.allows.Load(), l.State())
			}
		})
	}
}
