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

// TestWindowWords: how one bucket's word counts, whatever its number:
// a word never written takes any bucket (its number's low 32 bits may look
// negative), a later bucket takes the slot of an earlier one, a report for
// an earlier bucket than the slot holds is dropped, and a count saturates.
func TestWindowWords(t *testing.T) {
	t.Parallel()
	for _, first := range []int64{0, 7, 1 << 31, 1<<32 - 3, 1_700_000_000_000, -5} {
		var w window
		w.add(&w.succ, first)
		w.add(&w.succ, first)
		if got := count(&w.succ, first); got != 2 {
			t.Errorf("bucket %d: %d, want 2", first, got)
		}
		w.add(&w.succ, first+Buckets) // the same slot, a window later
		if got, old := count(&w.succ, first+Buckets), count(&w.succ, first); got != 1 || old != 0 {
			t.Errorf("bucket %d then %d: %d and %d, want 1 and 0", first, first+Buckets, got, old)
		}
		w.add(&w.succ, first) // late
		if got := count(&w.succ, first+Buckets); got != 1 {
			t.Errorf("a late report for bucket %d changed bucket %d: %d, want 1", first, first+Buckets, got)
		}
	}
	var w window
	w.succ[slot(3)].Store(3<<32 | math.MaxUint32 - 1)
	w.add(&w.succ, 3)
	w.add(&w.succ, 3)
	if got := count(&w.succ, 3); got != math.MaxUint32 {
		t.Errorf("saturated count %d, want %d", got, uint64(math.MaxUint32))
	}
}

// TestWindowBucket: buckets are whole multiples of the width from the
// epoch, before it too, and clearing moves every bucket a window on.
func TestWindowBucket(t *testing.T) {
	t.Parallel()
	w := window{width: 10}
	for _, tt := range []struct{ now, want int64 }{{0, 0}, {9, 0}, {10, 1}, {-1, -1}, {-10, -1}, {-11, -2}} {
		if got := w.bucket(tt.now); got != tt.want {
			t.Errorf("bucket(%d) = %d, want %d", tt.now, got, tt.want)
		}
	}
	for n := int64(-25); n < 25; n++ {
		if s := slot(n); s < 0 || s >= Buckets || (n-int64(s))%Buckets != 0 {
			t.Fatalf("slot(%d) = %d", n, s)
		}
	}
	w.add(&w.fail, w.bucket(5))
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
