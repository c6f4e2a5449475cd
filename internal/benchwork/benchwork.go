package benchwork

import (
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Keys returns n distinct keys, "client-0" to "client-<n-1>".
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "client-" + strconv.Itoa(i)
	}
	return keys
}

// SeqLen is the length of a Zipf sequence; a power of two, so that a
// benchmark can wrap around it with a mask.
const SeqLen = 1 << 20

var (
	zipfMu   sync.Mutex
	zipfSeqs = map[int][]uint32{}
)

// Zipf returns a fixed sequence of SeqLen indexes into n keys, drawn from a
// Zipf distribution with s = 1.1 and a fixed seed: the same sequence on
// every call and in every benchmark. The result is shared; do not modify it.
func Zipf(n int) []uint32 {
	zipfMu.Lock()
	defer zipfMu.Unlock()
	if seq, ok := zipfSeqs[n]; ok {
		return seq
	}
	r := rand.New(rand.NewSource(1))
	z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
	seq := make([]uint32, SeqLen)
	for i := range seq {
		seq[i] = uint32(z.Uint64())
	}
	zipfSeqs[n] = seq
	return seq
}

// Floor is the reference the benchmarks report ratios to: an unbounded
// sync.Map of GCRA states, each updated with one compare-and-swap, reading
// the clock as floodgate's default clock does, and computing nothing beyond
// admission. No real limiter can do less per decision.
type Floor struct {
	m              sync.Map
	interval, span int64
	start          time.Time
	startUnixNanos int64
}

// NewFloor returns a Floor enforcing l's rate and burst.
func NewFloor(l core.Limit) *Floor {
	t := int64(l.Interval())
	now := time.Now()
	return &Floor{interval: t, span: t * int64(l.EffectiveBurst()), start: now, startUnixNanos: now.UnixNano()}
}

// Allow reports whether key may make one request now, and charges it if so.
func (f *Floor) Allow(key string) bool {
	now := f.startUnixNanos + int64(time.Since(f.start))
	v, ok := f.m.Load(key)
	if !ok {
		v, _ = f.m.LoadOrStore(key, new(atomic.Int64))
	}
	p := v.(*atomic.Int64)
	for {
		tat := p.Load()
		next := max(tat, now) + f.interval
		if next-now > f.span {
			return false
		}
		if p.CompareAndSwap(tat, next) {
			return true
		}
	}
}
