package overload

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/tally"
)

// window counts the requests completed and their latencies in buckets of
// width nanoseconds: a ring of buckets, each for the bucket index (the
// instant over width) it last counted.
type window struct {
	width   int64
	buckets []bucket
	mu      sync.Mutex // serialises a bucket's reset
}

type bucket struct {
	epoch atomic.Int64 // the bucket index counted, math.MinInt64 for none
	units atomic.Int64 // units completed
	rtSum atomic.Int64 // latency × units, in ns
	_     [40]byte     // a bucket to a cache line: neighbours are written at once
}

// maxRT caps one request's latency in the sums, so that a bucket's sum
// cannot overflow: long streams say nothing of the service's latency.
const maxRT = int64(time.Minute)

func newWindow(width int64, n int) *window {
	w := &window{width: width, buckets: make([]bucket, n)}
	for i := range w.buckets {
		w.buckets[i].epoch.Store(math.MinInt64)
	}
	return w
}

func (w *window) index(now int64) int64 { return tally.Bucket(now, w.width) }

func (w *window) slot(idx int64) *bucket {
	n := int64(len(w.buckets))
	return &w.buckets[((idx%n)+n)%n]
}

// add counts units completed at now after rt.
func (w *window) add(now, rt, units int64) {
	idx := w.index(now)
	b := w.slot(idx)
	if e := b.epoch.Load(); e != idx {
		if e > idx {
			return // a sample older than the window: the slot counts newer ones
		}
		w.mu.Lock()
		if b.epoch.Load() < idx {
			b.units.Store(0)
			b.rtSum.Store(0)
			b.epoch.Store(idx)
		}
		w.mu.Unlock()
	}
	b.units.Add(units)
	b.rtSum.Add(min(max(rt, 0), maxRT) * units)
}

// snap is what the window concluded at the start of one bucket: the
// bucket in progress is left out, so the figures hold for its duration.
type snap struct {
	from, until int64 // the bucket: valid for instants in [from, until)
	maxPass     int64 // most units completed in one bucket
	minRT       int64 // least mean latency of a bucket, ns; 0 with none
	bound       int64 // maxPass × minRT / width: in flight with no queue, >= 1
	limit       core.Limit
}

// snapshot reads the completed buckets of the window ending at now.
func (w *window) snapshot(now int64) *snap {
	idx := w.index(now)
	n := int64(len(w.buckets))
	s := &snap{from: idx * w.width, until: (idx + 1) * w.width, minRT: -1}
	for i := range w.buckets {
		b := &w.buckets[i]
		e := b.epoch.Load()
		if e >= idx || e <= idx-n {
			continue // the bucket in progress, or one older than the window
		}
		units := b.units.Load()
		if units <= 0 {
			continue
		}
		s.maxPass = max(s.maxPass, units)
		if rt := b.rtSum.Load() / units; s.minRT < 0 || rt < s.minRT {
			s.minRT = rt
		}
	}
	s.minRT = max(s.minRT, 0)
	// Little's law: what a bucket's best throughput keeps in flight at the
	// least latency, in exact integer arithmetic.
	hi, lo := bits.Mul64(uint64(s.maxPass), uint64(s.minRT))
	s.bound = math.MaxInt32
	if hi < uint64(w.width) {
		if q, _ := bits.Div64(hi, lo, uint64(w.width)); q < math.MaxInt32 {
			s.bound = int64(q)
		}
	}
	s.bound = max(s.bound, 1)
	s.limit = core.InFlight(int(s.bound)).WithName("bbr")
	return s
}

// retryAfter estimates when excess more units will have completed, at
// the window's best throughput (or one per least latency, or per bucket,
// with less to go by): at least a millisecond, at most the window.
func (s *snap) retryAfter(excess, width int64, span time.Duration) time.Duration {
	per, every := uint64(width), uint64(1)
	switch {
	case s.maxPass > 0:
		every = uint64(s.maxPass)
	case s.minRT > 0:
		per = uint64(s.minRT)
	}
	hi, lo := bits.Mul64(uint64(excess), per)
	if hi >= every {
		return span
	}
	q, _ := bits.Div64(hi, lo, every)
	if q >= uint64(span) {
		return span
	}
	return max(time.Millisecond, time.Duration(q))
}
