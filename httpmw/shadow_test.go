package httpmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
)

// TestShadowExhausted: an exhausted limit, a refusing one or a shaping one
// with a queue, given to a WithShadow middleware or chosen per request by
// one, never refuses and never waits (the request's context has ended: a
// wait would fail it), whatever the failure mode and the denial hold; the
// observer hears what enforcing would have done, and the response carries
// the rate-limit fields only when WithHeaders is given.
func TestShadowExhausted(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name    string
		set     func(core.Limit) core.Limit
		outcome core.Outcome
	}{
		{"refusing", func(l core.Limit) core.Limit { return l.WithAlgorithm(core.GCRA) }, core.OutcomeDenied},
		{"shaping", func(l core.Limit) core.Limit { return l.WithMaxDelay(time.Hour) }, core.OutcomeShaped},
	}
	ways := []struct {
		name   string
		fields bool // WithHeaders is given
		build  func(s core.Limiter, opts ...httpmw.Option) (*httpmw.Limiter, error)
	}{
		{"given", false, func(s core.Limiter, opts ...httpmw.Option) (*httpmw.Limiter, error) {
			return httpmw.New(s, byAddr, opts...)
		}},
		{"given with headers", true, func(s core.Limiter, opts ...httpmw.Option) (*httpmw.Limiter, error) {
			return httpmw.New(s, byAddr, append(opts, httpmw.WithHeaders(core.HeadersBoth))...)
		}},
		{"chosen with headers", true, func(s core.Limiter, opts ...httpmw.Option) (*httpmw.Limiter, error) {
			opts = append(opts, httpmw.WithHeaders(core.HeadersBoth),
				httpmw.WithLimiterFunc(func(*http.Request) core.Limiter { return s }))
			return httpmw.New(nil, byAddr, opts...)
		}},
		{"chosen", false, func(s core.Limiter, opts ...httpmw.Option) (*httpmw.Limiter, error) {
			opts = append(opts, httpmw.WithLimiterFunc(func(*http.Request) core.Limiter { return s }))
			return httpmw.New(nil, byAddr, opts...)
		}},
	}
	for _, kind := range kinds {
		for _, way := range ways {
			t.Run(kind.name+"/"+way.name, func(t *testing.T) {
				t.Parallel()
				inner, _ := newKeyed(t, kind.set(core.PerMinute(1).WithName("trial")))
				// Spend the quota (the shaper's turn) as enforcing would.
				if d, err := inner.Allow(context.Background(), "192.0.2.1:1234", 1); err != nil || !d.Allowed || d.Delay != 0 {
					t.Fatalf("spending the quota: %+v, %v", d, err)
				}
				var events []core.Event
				obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
				l, err := way.build(inner, httpmw.WithShadow(),
					httpmw.WithObserver(obs), httpmw.WithFailureMode(core.FailClosed), httpmw.WithDenialHold(time.Hour, 8))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
				r.RemoteAddr = "192.0.2.1:1234"
				w := do(l.Handler(ok), r)
				if w.Code != http.StatusOK || w.Header().Get("X-Handler") != "ran" || w.Header().Get("Retry-After") != "" {
					t.Fatalf("answered %d, handler %q, Retry-After %q; want 200 from the handler, no Retry-After",
						w.Code, w.Header().Get("X-Handler"), w.Header().Get("Retry-After"))
				}
				if has := w.Header().Get("RateLimit") != ""; has != way.fields {
					t.Errorf("RateLimit %q; want fields: %v", w.Header().Get("RateLimit"), way.fields)
				}
				if len(events) != 1 {
					t.Fatalf("%d events, want 1", len(events))
				}
				e := events[0]
				if !e.Shadow || !e.Admitted || e.Outcome != kind.outcome || e.Held != 0 || e.Decision.Limit.Name != "trial" {
					t.Errorf("observed %+v; want a shadow event, admitted, %v, not held, by trial", e, kind.outcome)
				}
				if kind.outcome == core.OutcomeDenied && (e.Decision.Allowed || e.Decision.RetryAfter != time.Minute) {
					t.Errorf("observed decision %+v; want the refusal, RetryAfter 1m", e.Decision)
				}
				if kind.outcome == core.OutcomeShaped && e.Decision.Delay != time.Minute {
					t.Errorf("observed decision %+v; want the Delay of 1m", e.Decision)
				}
			})
		}
	}
}
