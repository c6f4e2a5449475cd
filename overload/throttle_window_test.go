package overload

import (
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/tally"
)

// A request decided in a bucket whose words already hold a later one
// (another caller read a later clock first) is sent, counted nowhere,
// and its ending does nothing.
func TestThrottleLateSend(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Unix(100, 0))
	th, err := NewThrottle(ThrottleConfig{Clock: clock, Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	n := th.bucket(clock.Now())
	th.sent[tally.Slot(n)].Store(uint64(uint32(n+tally.Buckets))<<32 | 1)
	tk, ok := th.Allow()
	if !ok || tk != (ThrottleTicket{}) {
		t.Fatalf("Allow = %+v, %v; want the zero ticket, true", tk, ok)
	}
	tk.End(core.EndDropped, time.Second)
	if th.Rejection().RetryAfter != 0 {
		t.Fatal("the zero ticket's End recorded a wait")
	}
}
