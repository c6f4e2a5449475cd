package overload

import (
	"math"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func TestTally(t *testing.T) {
	t.Parallel()
	var w tally
	at := func(n int64) uint64 { return w.atSlot(tallySlot(n), n) }
	if !w.add(5) || !w.add(5) || at(5) != 2 {
		t.Fatalf("two adds to bucket 5: %d", at(5))
	}
	if !w.add(15) || at(15) != 1 || at(5) != 0 {
		t.Fatalf("bucket 15 takes bucket 5's slot: %d and %d, want 1 and 0", at(15), at(5))
	}
	if w.add(5) || at(15) != 1 {
		t.Fatalf("a late add to bucket 5 was counted, or changed bucket 15 (%d)", at(15))
	}
	w.sub(5)
	w.sub(15)
	w.sub(15)
	if at(15) != 0 || w[tallySlot(15)].Load()>>32 != 15 {
		t.Fatalf("sub: bucket 15 holds %d (word %x), want 0 and its tag kept", at(15), w[tallySlot(15)].Load())
	}
	if tallySlot(-1) != 9 || tallySlot(-10) != 0 || tallySlot(-11) != 9 {
		t.Fatalf("slots of negative buckets: %d %d %d", tallySlot(-1), tallySlot(-10), tallySlot(-11))
	}
	w[tallySlot(7)].Store(7<<32 | math.MaxUint32)
	if !w.add(7) || at(7) != math.MaxUint32 {
		t.Fatalf("a full count spilled: %x", w[tallySlot(7)].Load())
	}
}

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
	th.sent[tallySlot(n)].Store(uint64(uint32(n+throttleBuckets))<<32 | 1)
	tk, ok := th.Allow()
	if !ok || tk != (ThrottleTicket{}) {
		t.Fatalf("Allow = %+v, %v; want the zero ticket, true", tk, ok)
	}
	tk.End(core.EndDropped, time.Second)
	if th.Rejection().RetryAfter != 0 {
		t.Fatal("the zero ticket's End recorded a wait")
	}
}
