package fallback

import (
	"testing"

	"github.com/floodgate/floodgate/internal/breaker"
)

// TestStatesMatchBreaker: the Limiter converts the breaker's states to
// State by number, so both must number them alike.
func TestStatesMatchBreaker(t *testing.T) {
	t.Parallel()
	for _, s := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		if got := State(s); got.String() != s.String() {
			t.Errorf("breaker's %v converts to %v", s, got)
		}
	}
}
