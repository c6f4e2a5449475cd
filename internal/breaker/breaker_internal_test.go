package breaker

import (
	"math"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

func TestOpenPeriod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		openFor, max time.Duration
		trips        int64
		want         time.Duration
	}{
		{time.Second, 10 * time.Second, 0, time.Second},
		{time.Second, 10 * time.Second, 3, 8 * time.Second},
		{time.Second, 10 * time.Second, 4, 10 * time.Second},
		{time.Second, 10 * time.Second, math.MaxInt64, 10 * time.Second},
		{time.Second, time.Second, 5, time.Second},
		{1 << 61, math.MaxInt64, 1, 1 << 62},
		{1 << 61, math.MaxInt64, 3, math.MaxInt64}, // doubling overflows
	}
	for _, tt := range tests {
		b := Breaker{openFor: tt.openFor, maxOpenFor: tt.max}
		if got := b.openPeriod(tt.trips); got != tt.want {
			t.Errorf("openPeriod(%d) from %v up to %v = %v, want %v", tt.trips, tt.openFor, tt.max, got, tt.want)
		}
	}
}

// TestOpenWord: the end of the open period is rounded up to the state
// bits, never down, and saturates instead of overflowing.
func TestOpenWord(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Unix(0, 1))
	b := Breaker{clock: clock, openFor: time.Second, maxOpenFor: time.Second}
	b.word.Store(b.openWord(0))
	for _, step := range []struct {
		at   int64
		want State
	}{
		{1, Open},
		{1 + int64(time.Second) - 1, Open},
		{1 + int64(time.Second) + 2, Open}, // rounded up by up to 3 ns
		{1 + int64(time.Second) + 3, HalfOpen},
	} {
		clock.Set(time.Unix(0, step.at))
		if got := b.State(); got != step.want {
			t.Errorf("at %d ns: %v, want %v", step.at, got, step.want)
		}
	}
	clock.Set(time.Unix(0, math.MaxInt64-5))
	w := b.openWord(0)
	if w&stateBits != wordOpen || w&^stateBits != math.MaxInt64&^stateBits {
		t.Errorf("openWord at the end of time = %#x, want open until %#x", w, math.MaxInt64&^stateBits)
	}
}

// TestWindowBucket: buckets are whole multiples of the width from the
// epoch, before it too, and clearing moves every bucket a window on.
// (internal/tally tests how each bucket counts.)
func TestWindowBucket(t *testing.T) {
	t.Parallel()
	w := window{width: 10}
	for _, tt := range []struct{ now, want int64 }{{0, 0}, {9, 0}, {10, 1}, {-1, -1}, {-10, -1}, {-11, -2}} {
		if got := w.bucket(tt.now); got != tt.want {
			t.Errorf("bucket(%d) = %d, want %d", tt.now, got, tt.want)
		}
	}
	w.fail.Add(w.bucket(5))
	if c := w.read(w.bucket(5)); c.calls != 1 || c.failures != 1 || c.curFail != 1 {
		t.Errorf("before clear: %+v", c)
	}
	w.clear()
	if got := w.bucket(5); got != Buckets {
		t.Errorf("after clear: bucket(5) = %d, want %d", got, Buckets)
	}
	if c := w.read(w.bucket(5)); c != (counts{}) {
		t.Errorf("after clear: %+v, want nothing", c)
	}
}
