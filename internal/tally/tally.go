package tally

import (
	"math"
	"sync/atomic"
)

// Buckets is how many buckets a Window is cut into: its counts leave the
// window a tenth of it at a time.
const Buckets = 10

// Bucket returns the number of the bucket of width ns that holds the
// instant now: now / width, rounded down before the epoch too, so that
// every bucket is width long.
func Bucket(now, width int64) int64 {
	n := now / width
	if now < 0 && n*width != now {
		n--
	}
	return n
}

// Slot returns the index in a Window of bucket n's word.
func Slot(n int64) int {
	i := int(n % Buckets)
	if i < 0 {
		i += Buckets
	}
	return i
}

// Window counts events in the last Buckets buckets. Each bucket's word
// holds in its high 32 bits a tag (the low 32 bits of the bucket's
// number) and in its low 32 bits the count: a count for a bucket whose
// word holds an older tag starts the word afresh, and a read ignores a
// word not tagged with the bucket it asks for. The zero Window counts
// nothing. It is safe for concurrent use, and takes no lock.
type Window [Buckets]atomic.Uint64

// Add counts one in bucket n and reports whether it did. It does not when
// n's word already counts a later bucket (the caller read its clock
// before another caller moved on): that count comes too late. A word
// never written is 0, and one written counts at least 1, so a first
// count is never taken for a late one, whatever the bucket's tag. A
// count saturates at 2³²−1 rather than spill into the tag. A count
// always lands in bucket n, never in a bucket that takes n's word while
// it is made.
func (w *Window) Add(n int64) bool {
	word, tag := &w[Slot(n)], uint32(n)
	for {
		old := word.Load()
		switch t := uint32(old >> 32); {
		case t == tag:
			// A compare-and-swap, not an add: between the load and an add
			// another caller may move the word on to a later bucket, and
			// the add would count this one there.
			if uint32(old) == math.MaxUint32 || word.CompareAndSwap(old, old+1) {
				return true
			}
		case old != 0 && int32(tag-t) < 0:
			return false
		case word.CompareAndSwap(old, uint64(tag)<<32|1):
			return true
		}
	}
}

// Sub takes one back from bucket n, if its word still counts bucket n and
// more than zero: a count that has left the window stays gone.
func (w *Window) Sub(n int64) {
	word, tag := &w[Slot(n)], uint32(n)
	for {
		old := word.Load()
		if uint32(old>>32) != tag || uint32(old) == 0 || word.CompareAndSwap(old, old-1) {
			return
		}
	}
}

// Count returns the count of bucket n: 0 unless its word counts bucket n.
func (w *Window) Count(n int64) uint64 { return w.CountAt(Slot(n), n) }

// CountAt is Count for a caller that knows n's slot (Slot(n)): one that
// reads many buckets in turn finds the newest one's slot once and steps
// back from it, sparing a division each.
func (w *Window) CountAt(i int, n int64) uint64 {
	v := w[i].Load()
	if uint32(v>>32) != uint32(n) {
		return 0
	}
	return v & math.MaxUint32
}
