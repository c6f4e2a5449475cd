package httpclient_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestLimitedShadow: a LimitedTransport over an exhausted shadow limit
// (refusing, shaping, a concurrency limit with its slot taken, or one
// whose store is down) sends every request at once: no wait, no
// ErrLimited, no error.
func TestLimitedShadow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lim  func(clock *coretest.Clock) core.Limiter
	}{
		{"refusing", func(clock *coretest.Clock) core.Limiter {
			return newLimiter(t, core.PerMinute(1).WithAlgorithm(core.GCRA), clock)
		}},
		{"shaping", func(clock *coretest.Clock) core.Limiter {
			return newLimiter(t, core.PerMinute(1).WithAlgorithm(core.LeakyBucket).WithMaxDelay(time.Hour), clock)
		}},
		{"in flight", func(clock *coretest.Clock) core.Limiter {
			return newLimiter(t, core.InFlight(1).WithAlgorithm(core.Concurrency), clock)
		}},
		{"store down", func(*coretest.Clock) core.Limiter {
			return coretest.StoreDown(&core.StoreError{Op: "allow", Err: context.DeadlineExceeded})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sl := newSleeper()
			s := &sent{clock: sl.clock}
			inner := tc.lim(sl.clock)
			// Take the quota, the shaper's turn or the slot, as enforcing would.
			_, _ = inner.Allow(context.Background(), "api.test", 1)
			c := limited(t, s, &core.Shadow{Limiter: inner}, sl, httpclient.WithMaxWait(time.Second))
			for i := range 3 {
				if _, err := doGet(c, "http://api.test/"); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			if want := []time.Duration{0, 0, 0}; !slices.Equal(s.times(), want) {
				t.Errorf("sent at %v, want %v", s.times(), want)
			}
			if len(sl.got()) != 0 {
				t.Errorf("waited %v, want never", sl.got())
			}
		})
	}
}
