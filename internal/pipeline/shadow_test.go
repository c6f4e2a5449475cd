package pipeline_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// TestShadowDecisions: a limiter that returns shadow decisions itself
// (core.Decision.Shadow) is known by them: every request is admitted,
// without a shaping wait or a held denial, whatever the failure mode, and
// the observer hears exactly what it hears for the same limiter's
// enforcing decisions in shadow mode (the decision enforcing would have
// made, Event.Shadow), less the limiter's own error text, which was not
// kept. Nothing that charged nothing is recorded for a refund, and
// ShadowDecision gives back the shadow decision.
func TestShadowDecisions(t *testing.T) {
	t.Parallel()
	leased := allow
	leased.Lease = core.NewLease(func(context.Context) error { return nil })
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
			waits := 0
			shadowMode := c
			shadowMode.Shadow = true
			var results [2]pipeline.Result
			for i, run := range []struct {
				c   pipeline.Config[req]
				lim core.Limiter
			}{
				{shadowMode, &fixed{d: tc.d, err: tc.err}},
				{c, &fixed{d: tc.shadow}},
			} {
				p := pipeline.New(run.c)
				pipeline.SetSleep(p, func(context.Context, time.Duration) error { waits++; return nil })
				res := &results[i]
				p.Run(context.Background(), req{key: "k", cost: 1}, run.lim, 0, res)
				if !res.Admitted() || !res.Shadow || res.Outcome != tc.outcome || waits != 0 {
					t.Fatalf("run %d: admitted %v, shadow %v, outcome %v, %d waits; want admitted, shadow, %v, none",
						i, res.Admitted(), res.Shadow, res.Outcome, waits, tc.outcome)
				}
				if ctx := context.Background(); (pipeline.Attach(ctx, run.lim, res) != ctx) != tc.charged {
					t.Errorf("run %d: a charge recorded for a refund: %v, want %v", i, !tc.charged, tc.charged)
				}
				if got := res.ShadowDecision(); !reflect.DeepEqual(got, tc.shadow) {
					t.Errorf("run %d: ShadowDecision\n%+v, want\n%+v", i, got, tc.shadow)
				}
			}
			if len(events) != 2 {
				t.Fatalf("%d events, want 2", len(events))
			}
			mode, own := events[0], events[1]
			if (mode.Err == nil) != (own.Err == nil) || pipeline.Classify(own.Err) != pipeline.Classify(mode.Err) {
				t.Errorf("errors %v and %v, want the same kind", mode.Err, own.Err)
			}
			mode.Err, own.Err = nil, nil
			mode.Latency, own.Latency = 0, 0 // a sample
			if !reflect.DeepEqual(mode, own) || !mode.Shadow || !mode.Admitted || mode.Outcome != tc.outcome {
				t.Errorf("observed\n%+v in shadow mode,\n%+v from shadow decisions; want the same shadow event, admitted, %v", mode, own, tc.outcome)
			}
			if !reflect.DeepEqual(results[0].Decision, results[1].Decision) {
				t.Errorf("Result.Decision %+v in shadow mode, %+v from shadow decisions", results[0].Decision, results[1].Decision)
			}
		})
	}
}

// TestShadowMetered: Decide, which grpcmw calls for each message of a
// metered stream, never enforces in shadow mode either, nor a shadow
// decision.
func TestShadowMetered(t *testing.T) {
	t.Parallel()
	shadowDeny := core.Decision{Allowed: true, Shadow: true, Would: core.OutcomeDenied, WouldWait: time.Second, Limit: deny.Limit}
	for i, run := range []struct {
		p   *pipeline.Pipeline[req]
		lim core.Limiter
	}{
		{newShadowPipeline(core.FailClosed, nil), &fixed{d: deny}},
		{newPipeline(core.FailClosed, nil), &fixed{d: shadowDeny}},
	} {
		var res pipeline.Result
		run.p.Decide(context.Background(), run.lim, "k", 1, &res)
		if !res.Admitted() || !res.Shadow || res.Outcome != core.OutcomeDenied || res.Decision.RetryAfter != time.Second {
			t.Errorf("run %d: %+v; want a shadow denial, admitted, RetryAfter 1s", i, res)
		}
	}
}
