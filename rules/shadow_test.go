package rules

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestShadowRuleNeverRefuses: a rule in shadow mode, refusing or shaping,
// never refuses or delays a request, through the set's middleware (whose
// observer hears what enforcing would have done) or for code that asks
// the rule's Limiter itself, as grpcrules and users do.
func TestShadowRuleNeverRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		algorithm string
		outcome   core.Outcome
	}{
		{"gcra", core.OutcomeDenied},
		{"leaky-bucket\n    max-delay: 1h", core.OutcomeShaped},
	} {
		t.Run(tc.outcome.String(), func(t *testing.T) {
			t.Parallel()
			clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
			var events []core.Event
			obs := core.ObserverFunc(func(_ context.Context, e core.Event) { events = append(events, e) })
			s, err := New("r.yaml", []byte(`rules:
  - name: trial
    match: {paths: [/s]}
    limit: 1/min
    algorithm: `+tc.algorithm+`
    shadow: true
`), WithCoreOptions(core.WithClock(clock)), WithHTTPOptions(httpmw.WithObserver(obs)), quietly)
			if err != nil {
				t.Fatal(err)
			}
			c := s.Table().Rules()[0]
			if d, err := c.Limiter.Allow(context.Background(), "192.0.2.1", 1); err != nil || !d.Allowed || d.Delay != 0 {
				t.Fatalf("spending the quota: %+v, %v", d, err)
			}
			// The request's context has ended: a shaping wait would fail it.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			r := httptest.NewRequest("GET", "/s", nil).WithContext(ctx)
			r.RemoteAddr = "192.0.2.1:1234"
			w := httptest.NewRecorder()
			s.Middleware(ok).ServeHTTP(w, r)
			if w.Code != http.StatusOK || len(events) != 1 || !events[0].Shadow || events[0].Outcome != tc.outcome {
				t.Errorf("middleware: %d, observed %+v; want 200, one shadow event %v", w.Code, events, tc.outcome)
			}
			// The rule's limiter itself enforces: shadow mode is the
			// middleware's.
			d, err := c.Limiter.Allow(context.Background(), "192.0.2.1", 1)
			if err != nil || d.Shadow || d.Allowed == (tc.outcome == core.OutcomeDenied) {
				t.Errorf("Limiter.Allow = %+v, %v; want the enforcing decision (%v)", d, err, tc.outcome)
			}
		})
	}
}
