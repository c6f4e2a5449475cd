package tally

import (
	"math"
	"sync"
	"testing"
)

// TestBucket: buckets are whole multiples of the width from the epoch,
// before it too.
func TestBucket(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ now, want int64 }{
		{0, 0}, {9, 0}, {10, 1}, {-1, -1}, {-10, -1}, {-11, -2}, {math.MinInt64, math.MinInt64/10 - 1},
	} {
		if got := Bucket(tt.now, 10); got != tt.want {
			t.Errorf("Bucket(%d, 10) = %d, want %d", tt.now, got, tt.want)
		}
	}
}

// TestSlot: bucket n's word is n modulo Buckets, never negative.
func TestSlot(t *testing.T) {
	t.Parallel()
	if Slot(-1) != 9 || Slot(-10) != 0 || Slot(-11) != 9 || Slot(23) != 3 {
		t.Errorf("Slot(-1, -10, -11, 23) = %d %d %d %d, want 9 0 9 3", Slot(-1), Slot(-10), Slot(-11), Slot(23))
	}
	for n := int64(-25); n < 25; n++ {
		if s := Slot(n); s < 0 || s >= Buckets || (n-int64(s))%Buckets != 0 {
			t.Fatalf("Slot(%d) = %d", n, s)
		}
	}
	if s := Slot(math.MinInt64); s != 2 { // -9223372036854775808 = -922337203685477581·10 + 2
		t.Errorf("Slot(MinInt64) = %d, want 2", s)
	}
}

// TestWindowWords: how one bucket's word counts, whatever its number: a
// word never written takes any bucket (its number's low 32 bits may look
// negative), a later bucket takes the slot of an earlier one, a count for
// an earlier bucket than the slot holds is dropped and reported so, and
// Count and CountAt read only the bucket asked for.
func TestWindowWords(t *testing.T) {
	t.Parallel()
	for _, first := range []int64{0, 7, 1 << 31, 1<<32 - 3, 1_700_000_000_000, -5} {
		var w Window
		if !w.Add(first) || !w.Add(first) || w.Count(first) != 2 || w.CountAt(Slot(first), first) != 2 {
			t.Errorf("bucket %d: %d, want 2", first, w.Count(first))
		}
		if !w.Add(first + Buckets) { // the same slot, a window later
			t.Errorf("bucket %d after %d: not counted", first+Buckets, first)
		}
		if got, old := w.Count(first+Buckets), w.Count(first); got != 1 || old != 0 {
			t.Errorf("bucket %d then %d: %d and %d, want 1 and 0", first, first+Buckets, got, old)
		}
		if w.Add(first) { // late
			t.Errorf("a late count for bucket %d was taken", first)
		}
		if got := w.Count(first + Buckets); got != 1 {
			t.Errorf("a late count for bucket %d changed bucket %d: %d, want 1", first, first+Buckets, got)
		}
		if got := w.Count(first + 1); got != 0 {
			t.Errorf("bucket %d, never counted: %d", first+1, got)
		}
	}
}

// TestWindowSub: Sub takes back from the bucket it names only, never below
// zero, and keeps the word's tag (so a late Add stays late).
func TestWindowSub(t *testing.T) {
	t.Parallel()
	var w Window
	w.Add(5)
	w.Add(5)
	w.Add(15) // takes bucket 5's word
	w.Sub(5)  // gone with the window: nothing to take back
	if w.Count(15) != 1 {
		t.Fatalf("Sub of a bucket that left the window changed the next: %d, want 1", w.Count(15))
	}
	w.Sub(15)
	w.Sub(15)
	if w.Count(15) != 0 || w[Slot(15)].Load()>>32 != 15 {
		t.Fatalf("bucket 15 holds %d (word %x), want 0 and its tag kept", w.Count(15), w[Slot(15)].Load())
	}
	if w.Add(5) {
		t.Fatal("a late count for bucket 5 was taken after bucket 15 went back to 0")
	}
	w.Sub(3) // a word never written stays so
	if w[Slot(3)].Load() != 0 {
		t.Fatalf("Sub of a bucket never counted wrote %x", w[Slot(3)].Load())
	}
}

// TestWindowSaturates: a full count stays full instead of spilling into
// the tag.
func TestWindowSaturates(t *testing.T) {
	t.Parallel()
	var w Window
	w[Slot(3)].Store(3<<32 | math.MaxUint32 - 1)
	w.Add(3)
	if !w.Add(3) || w.Count(3) != math.MaxUint32 {
		t.Fatalf("saturated count %d (word %x), want %d", w.Count(3), w[Slot(3)].Load(), uint64(math.MaxUint32))
	}
}

// TestWindowConcurrent: counts from many goroutines into buckets that move
// on while they count, three windows' worth, so that goroutines behind the
// others count late; run with -race. Every Add that reports a count is in
// the window until a later bucket takes its word: the counts of the last
// window's buckets add up to the Adds that reported one, less the Subs.
// Each round is short and a count gone astray rare, so it runs many.
func TestWindowConcurrent(t *testing.T) {
	t.Parallel()
	const rounds, goroutines, each, buckets = 200, 4, 600, 3 * Buckets
	for r := range rounds {
		var (
			w       Window
			wg      sync.WaitGroup
			counted [goroutines][buckets]uint64 // by goroutine and bucket
		)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					n := int64(i / (each / buckets)) // each goroutine walks the buckets in turn
					if w.Add(n) {
						counted[g][n]++
						if i%3 == 0 {
							w.Sub(n)
							counted[g][n]--
						}
					}
				}
			}()
		}
		wg.Wait()
		for n := int64(buckets - Buckets); n < buckets; n++ {
			var want uint64
			for g := range goroutines {
				want += counted[g][n]
			}
			if got := w.Count(n); got != want || want == 0 {
				t.Fatalf("round %d, bucket %d: %d, want %d (and more than 0)", r, n, got, want)
			}
		}
	}
}
