package pipeline_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// wrapped hides the limiter it holds from a type assertion, as fallback,
// a rules table or a user's instrumentation does.
type wrapped struct{ core.Limiter }

// TestShadowInside: a core.Shadow inside another limiter is known by its
// decisions: every request is admitted, without a shaping wait or a held
// denial, whatever the failure mode, and the observer hears exactly what
// it hears for the same Shadow given to Run (the decision enforcing would
// have made, Event.Shadow), less the limiter's own error text, which the
// Shadow did not keep. Nothing that charged nothing is recorded for a
// refund.
func TestShadowInside(t *testing.T) {
	t.Parallel()
	leased := allow
	leased.Lease = core.NewLease(func(context.Context) error { return nil })
	for _, tc := range []struct {
		name    string
		d       core.Decision
		err     error
		outcome core.Outcome
		charged bool
	}{
		{"allowed", allow, nil, core.OutcomeAllowed, true},
		{"lease", leased, nil, core.OutcomeAllowed, true},
		{"denied", deny, nil, core.OutcomeDenied, false},
		{"shaped", core.Decision{Allowed: true, Limit: core.PerSecond(1), Delay: time.Hour}, nil, core.OutcomeShaped, true},
		{"store error", core.Decision{}, storeErr, core.OutcomeStoreError, false},
		{"bad cost", core.Decision{}, core.ErrCostTooLarge, core.OutcomeBadCost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []core.Event
			obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
			p := pipeline.New(pipeline.Config[req]{
				Key:      func(r req) (string, error) { return r.key, nil },
				Failure:  core.FailClosed,
				Observer: obs,
				Hold:     pipeline.Hold{Max: time.Hour, Concurrent: 8},
			})
			waits := 0
			pipeline.SetSleep(p, func(context.Context, time.Duration) error { waits++; return nil })
			f := &fixed{d: tc.d, err: tc.err}
			var results [2]pipeline.Result
			for i, lim := range []core.Limiter{&core.Shadow{Limiter: f, Headers: true}, wrapped{&core.Shadow{Limiter: f, Headers: true}}} {
				res := &results[i]
				p.Run(context.Background(), req{key: "k"}, lim, 1, res)
				if !res.Admitted() || !res.Shadow || res.Outcome != tc.outcome || waits != 0 {
					t.Fatalf("%T: admitted %v, shadow %v, outcome %v, %d waits; want admitted, shadow, %v, none",
						lim, res.Admitted(), res.Shadow, res.Outcome, waits, tc.outcome)
				}
				if ctx := context.Background(); (pipeline.Attach(ctx, lim, res) != ctx) != tc.charged {
					t.Errorf("%T: a charge recorded for a refund: %v, want %v", lim, !tc.charged, tc.charged)
				}
			}
			// Headers is the Shadow's own: inside another limiter it is
			// not seen, and no fields are sent.
			if !results[0].ShadowHeaders || results[1].ShadowHeaders {
				t.Errorf("ShadowHeaders %v given to Run, %v inside; want true, false", results[0].ShadowHeaders, results[1].ShadowHeaders)
			}
			if len(events) != 2 {
				t.Fatalf("%d events, want 2", len(events))
			}
			given, inside := events[0], events[1]
			if (given.Err == nil) != (inside.Err == nil) || pipeline.Classify(inside.Err) != pipeline.Classify(given.Err) {
				t.Errorf("errors %v and %v, want the same kind", given.Err, inside.Err)
			}
			given.Err, inside.Err = nil, nil
			given.Latency, inside.Latency = 0, 0 // a sample
			if !reflect.DeepEqual(given, inside) || !given.Shadow || !given.Admitted || given.Outcome != tc.outcome {
				t.Errorf("observed\n%+v given to Run,\n%+v inside; want the same shadow event, admitted, %v", given, inside, tc.outcome)
			}
			if !reflect.DeepEqual(results[0].Decision, results[1].Decision) {
				t.Errorf("Result.Decision %+v given to Run, %+v inside", results[0].Decision, results[1].Decision)
			}
		})
	}
}

// TestShadowMetered: Decide, which grpcmw calls for each message of a
// metered stream, never enforces a shadow decision either.
func TestShadowMetered(t *testing.T) {
	t.Parallel()
	p := newPipeline(core.FailClosed, nil)
	for _, lim := range []core.Limiter{&core.Shadow{Limiter: &fixed{d: deny}}, wrapped{&core.Shadow{Limiter: &fixed{d: deny}}}} {
		var res pipeline.Result
		p.Decide(context.Background(), lim, "k", 1, &res)
		if !res.Admitted() || !res.Shadow || res.Outcome != core.OutcomeDenied || res.Decision.RetryAfter != time.Second {
			t.Errorf("%T: %+v; want a shadow denial, admitted, RetryAfter 1s", lim, res)
		}
	}
}
