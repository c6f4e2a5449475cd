package pipeline_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// TestShadowDecisions: in shadow mode every request is admitted, without
// a shaping wait or a held denial, whatever the failure mode; the observer
// hears the decision enforcing would have made (Event.Shadow, with its
// outcome); nothing that charged nothing is recorded for a refund; and
// ShadowDecision gives the caller the shadow decision.
func TestShadowDecisions(t *testing.T) {
	t.Parallel()
	leased := allow
	leased.Lease = core.NewLease(func(context.Context, core.Ending) error { return nil })
	shadowOf := func(d core.Decision, would core.Outcome, wait time.Duration) core.Decision {
		d.Allowed, d.Shadow, d.Would, d.WouldWait, d.RetryAfter, d.Delay = true, true, would, wait, 0, 0
		return d
	}
	shaped := core.Decision{Allowed: true, Limit: core.PerSecond(1), Delay: time.Hour}
	for _, tc := range []struct {
		name    string
		d       core.Decision // what enforcing decides
		err     error
		shadow  core.Decision // the same as a shadow decision
		outcome core.Outcome
		charged bool
	}{
		{"allowed", allow, nil, shadowOf(allow, core.OutcomeAllowed, 0), core.OutcomeAllowed, true},
		{"lease", leased, nil, shadowOf(leased, core.OutcomeAllowed, 0), core.OutcomeAllowed, true},
		{"denied", deny, nil, shadowOf(deny, core.OutcomeDenied, time.Second), core.OutcomeDenied, false},
		{"shaped", shaped, nil, shadowOf(shaped, core.OutcomeShaped, time.Hour), core.OutcomeShaped, true},
		{"store error", core.Decision{}, storeErr, shadowOf(core.Decision{}, core.OutcomeStoreError, 0), core.OutcomeStoreError, false},
		{"bad cost", core.Decision{}, core.ErrCostTooLarge, shadowOf(core.Decision{}, core.OutcomeBadCost, 0), core.OutcomeBadCost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []core.Event
			obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
			c := config(core.FailClosed, obs)
			c.Hold = pipeline.Hold{Max: time.Hour, Concurrent: 8}
			c.Shadow = true
			waits := 0
			lim := &fixed{d: tc.d, err: tc.err}
			p := pipeline.New(c)
			pipeline.SetSleep(p, func(context.Context, time.Duration) error { waits++; return nil })
			var res pipeline.Result
			p.Run(context.Background(), req{key: "k", cost: 1}, lim, 0, &res)
			if !res.Admitted() || !res.Shadow || res.Outcome != tc.outcome || waits != 0 {
				t.Fatalf("admitted %v, shadow %v, outcome %v, %d waits; want admitted, shadow, %v, none",
					res.Admitted(), res.Shadow, res.Outcome, waits, tc.outcome)
			}
			if ctx := context.Background(); (pipeline.Attach(ctx, lim, &res) != ctx) != tc.charged {
				t.Errorf("a charge recorded for a refund: %v, want %v", !tc.charged, tc.charged)
			}
			if got := res.ShadowDecision(); !reflect.DeepEqual(got, tc.shadow) {
				t.Errorf("ShadowDecision\n%+v, want\n%+v", got, tc.shadow)
			}
			if len(events) != 1 || !events[0].Shadow || !events[0].Admitted || events[0].Outcome != tc.outcome ||
				(events[0].Err == nil) != (tc.err == nil) || events[0].Decision.Allowed != tc.d.Allowed {
				t.Errorf("observed %+v; want one shadow event, admitted, %v, the enforcing decision", events, tc.outcome)
			}
		})
	}
}

// TestShadowMetered: Decide, which grpcmw calls for each message of a
// metered stream, never enforces in shadow mode either.
func TestShadowMetered(t *testing.T) {
	t.Parallel()
	var res pipeline.Result
	newShadowPipeline(core.FailClosed, nil).Decide(context.Background(), &fixed{d: deny}, "k", 1, &res)
	if !res.Admitted() || !res.Shadow || res.Outcome != core.OutcomeDenied || res.Decision.RetryAfter != time.Second {
		t.Errorf("%+v; want a shadow denial, admitted, RetryAfter 1s", res)
	}
}
