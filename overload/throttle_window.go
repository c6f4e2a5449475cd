package overload

import (
	"math"
	"sync/atomic"
)

// throttleBuckets is how many buckets a Throttle's window is cut into: its
// counts leave the window a tenth of it at a time.
const throttleBuckets = 10

// tally is a window of counts over the last throttleBuckets buckets of the
// clock, without a lock: each bucket is one atomic word whose high 32 bits
// tag the bucket (the low 32 bits of its number) and low 32 bits count. A
// record for a bucket whose word holds an older tag resets the word; a read
// ignores every word not tagged with the bucket it asks for. So a bucket's
// counts vanish as soon as the clock leaves the window behind, and nothing
// sweeps it. (internal/breaker counts its outcomes the same way.)
type tally [throttleBuckets]atomic.Uint64

// tallySlot returns the index of bucket n's word.
func tallySlot(n int64) int {
	i := int(n % throttleBuckets)
	if i < 0 {
		i += throttleBuckets
	}
	return i
}

// add counts one in bucket n and reports whether it did: a record for a
// bucket whose word already holds a later one (a caller that read the
// clock before another moved on) comes too late and is not counted.
func (t *tally) add(n int64) bool {
	word, tag := &t[tallySlot(n)], uint32(n)
	for {
		old := word.Load()
		switch w := uint32(old >> 32); {
		case w == tag:
			if uint32(old) != math.MaxUint32 { // saturate rather than spill into the tag
				word.Add(1)
			}
			return true
		case old != 0 && int32(tag-w) < 0:
			return false
		case word.CompareAndSwap(old, uint64(tag)<<32|1):
			return true
		}
	}
}

// sub takes one back from bucket n, if its word still holds bucket n and
// counts more than zero: a record that has left the window stays gone.
func (t *tally) sub(n int64) {
	word, tag := &t[tallySlot(n)], uint32(n)
	for {
		old := word.Load()
		if uint32(old>>32) != tag || uint32(old) == 0 || word.CompareAndSwap(old, old-1) {
			return
		}
	}
}

// atSlot returns the count of bucket n, whose slot is i: 0 unless its
// word is tagged with n.
func (t *tally) atSlot(i int, n int64) uint64 {
	w := t[i].Load()
	if uint32(w>>32) != uint32(n) {
		return 0
	}
	return w & math.MaxUint32
}

// throttleSums returns, for the window whose newest bucket is n, the sum of
// sent and of accepted over it, and how many of the requests sent in its
// newest two buckets are not answered yet (neither accepted nor refused).
// It finds n's slot once (a division costs more than all the loads).
func throttleSums(sent, accepted, refused *tally, n int64) (s, a, young uint64) {
	i := tallySlot(n)
	for j := range int64(throttleBuckets) {
		sj, aj := sent.atSlot(i, n-j), accepted.atSlot(i, n-j)
		s += sj
		a += aj
		if j < 2 {
			if answered := aj + refused.atSlot(i, n-j); sj > answered {
				young += sj - answered
			}
		}
		if i--; i < 0 {
			i = throttleBuckets - 1
		}
	}
	return s, a, young
}
