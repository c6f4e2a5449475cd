package overload

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// BBRConfig configures a [BBR] limiter. The zero value is the defaults:
// this process's CPU, past 0.8, over a 10 s window of 100 buckets, with a
// cool-off of 1 s.
type BBRConfig struct {
	// CPU returns the CPU use, from 0 to 1 (nil: a [CPU] reader with this
	// Clock and its default settings, which Close stops). It is called on
	// every request, concurrently: it should only load a value that
	// something else samples, as CPU.Load does.
	CPU func() float64
	// Threshold is the CPU use from which the limit applies (0: 0.8),
	// greater than 0 and at most 1.
	Threshold float64
	// Window is the time over which the best throughput and the least
	// latency are taken (0: 10 s).
	Window time.Duration
	// Buckets is how many parts Window is counted in (0: 100); the limit
	// is reckoned afresh at the start of each, from the others. Each must
	// last at least a millisecond.
	Buckets int
	// CoolOff is how long the limit still applies after CPU use falls
	// below the threshold, counted from the last request shed while it
	// was past it (0: 1 s; negative: none). Shedding lowers CPU use, and
	// the reading lags the load by about a second (CPUConfig.Smoothing
	// and a sample): without it, CPU use hovers at the threshold and the
	// gate opens and shuts with every sample.
	CoolOff time.Duration
	// Clock times requests and buckets (nil: core.SystemClock).
	Clock core.Clock
}

// BBR is CPU-adaptive shedding as kratos and Sentinel define it: while
// the CPU is busy past a threshold, a request is admitted only while the
// requests in flight are fewer than the window's best throughput times
// its least latency (Little's law: what the service holds with no queue),
// so that a busy service stops queueing work it cannot finish in time.
// Below the threshold, and after the cool-off, every request is
// admitted. The throughput is the most requests completed in one bucket
// and the latency the least mean latency of a bucket, both over the
// buckets before the current one, in nanoseconds.
//
// Priorities (PriorityOf the request's context): under the limit a
// request below Normal is admitted while in flight is under half the
// bound, Normal under the bound, and above Normal under 1¼ the bound, so
// the lowest is shed first and critical work keeps a share of its own.
// One request is always admitted when none is in flight.
//
// Cost counts a request's units: in flight, in throughput and weighting
// its latency. The key is ignored: the limit is the whole service's.
//
// A refusal is a Decision with Shed set, the current bound as its Limit
// and a RetryAfter of the time the excess takes to complete at the best
// throughput (at least 1 ms, at most the window). An admission holds a
// Lease ([core.NewLease]) whose End counts the request's latency
// and completion, unless it ended EndIgnored; its Limit and Remaining are
// the bound and what is left under it for Normal priority, which admit
// exactly while the limit applies and say what would apply otherwise.
// BBR is safe for concurrent use.
type BBR struct {
	cpu       func() float64
	own       *CPU
	clock     core.Clock
	threshold float64
	coolOff   int64
	span      time.Duration
	win       *window

	snap atomic.Pointer[snap]
	mu   sync.Mutex // one snapshot at a time

	_         [64]byte
	inFlight  atomic.Int64
	_         [56]byte
	coolUntil atomic.Int64 // the limit applies before this instant, CPU aside
	_         [56]byte
}

var _ core.Limiter = (*BBR)(nil)

// NewBBR returns a BBR limiter, or an error saying which setting to fix.
// With a nil cfg.CPU it starts a CPU reader; Close stops it.
func NewBBR(cfg BBRConfig) (*BBR, error) {
	b := &BBR{cpu: cfg.CPU, clock: cfg.Clock, threshold: cfg.Threshold,
		coolOff: int64(cfg.CoolOff), span: cfg.Window}
	if b.clock == nil {
		b.clock = core.SystemClock
	}
	if b.threshold == 0 {
		b.threshold = 0.8
	}
	if b.coolOff == 0 {
		b.coolOff = int64(time.Second)
	}
	if b.span == 0 {
		b.span = 10 * time.Second
	}
	n := cfg.Buckets
	if n == 0 {
		n = 100
	}
	switch {
	case !(b.threshold > 0 && b.threshold <= 1): // NaN fails
		return nil, fmt.Errorf("overload: BBRConfig.Threshold must be > 0 and <= 1 (0 for 0.8), got %v", cfg.Threshold)
	case b.span < 0:
		return nil, fmt.Errorf("overload: BBRConfig.Window must be >= 0 (0 for 10s), got %v", cfg.Window)
	case n < 2:
		return nil, fmt.Errorf("overload: BBRConfig.Buckets must be >= 2 (0 for 100), got %d", cfg.Buckets)
	case b.span/time.Duration(n) < time.Millisecond:
		return nil, fmt.Errorf("overload: BBRConfig.Window %v in %d buckets makes buckets under 1ms: lower Buckets or raise Window", b.span, n)
	}
	if b.cpu == nil {
		c, err := NewCPU(CPUConfig{Clock: b.clock})
		if err != nil {
			return nil, err
		}
		b.own, b.cpu = c, c.Load
	}
	b.win = newWindow(int64(b.span/time.Duration(n)), n)
	b.snap.Store(b.win.snapshot(b.clock.Now()))
	return b, nil
}

// Allow admits the request, or sheds it while the CPU is busy and the
// requests in flight are at the bound for its priority. It fails only
// for a cost below 1.
func (b *BBR) Allow(ctx context.Context, _ string, cost int) (core.Decision, error) {
	if cost < 1 {
		return core.Decision{}, fmt.Errorf("%w: cost must be >= 1, got %d", core.ErrInvalidCost, cost)
	}
	units := int64(cost)
	now := b.clock.Now()
	s := b.current(now)
	hot := b.cpu() >= b.threshold
	if !hot && now >= b.coolUntil.Load() {
		return b.admit(s, now, b.inFlight.Add(units), units), nil
	}
	lim := boundFor(s.bound, PriorityOf(ctx))
	for {
		cur := b.inFlight.Load()
		if cur > 0 && cur+units > lim {
			if until := now + b.coolOff; hot && b.coolOff > 0 && until > b.coolUntil.Load() {
				b.coolUntil.Store(until)
			}
			return core.Decision{Shed: true, Limit: s.limit,
				RetryAfter: s.retryAfter(cur+units-lim, b.win.width, b.span)}, nil
		}
		if raceHook != nil {
			raceHook()
		}
		if b.inFlight.CompareAndSwap(cur, cur+units) {
			return b.admit(s, now, cur+units, units), nil
		}
	}
}

// raceHook, set by a test, runs between reading the units in flight and
// claiming some, where racing admissions would slip past the bound but
// for the compare-and-swap.
var raceHook func()

// boundFor is the in-flight bound a request of priority p is admitted
// under.
func boundFor(bound int64, p Priority) int64 {
	switch {
	case p < Normal:
		return max(1, bound/2)
	case p > Normal:
		return bound + max(1, bound/4)
	}
	return bound
}

func (b *BBR) admit(s *snap, start, inFlight, units int64) core.Decision {
	r := bbrHolds.Get().(*bbrHold)
	r.b, r.start, r.units = b, start, units
	return core.Decision{Allowed: true, Limit: s.limit, Remaining: int(max(0, s.bound-inFlight)),
		Lease: core.LeaseOf(r, r.gen.Load())}
}

// bbrHold is a BBR admission's record (a core.Holder), recycled so that
// an admission allocates nothing, as Adaptive's leaseEnd is.
type bbrHold struct {
	gen          atomic.Uint64
	b            *BBR
	start, units int64
}

var bbrHolds = sync.Pool{New: func() any { return new(bbrHold) }}

// EndLease ends the admission of generation gen, once.
func (r *bbrHold) EndLease(_ context.Context, gen uint64, e core.Ending) error {
	if !r.gen.CompareAndSwap(gen, gen+1) {
		return nil
	}
	b, start, units := r.b, r.start, r.units
	r.b = nil
	bbrHolds.Put(r)
	b.end(start, units, e)
	return nil
}

// end is a lease's End: the slot back, and the request counted unless
// its ending says nothing of the service.
func (b *BBR) end(start, units int64, e core.Ending) {
	b.inFlight.Add(-units)
	if e == core.EndIgnored {
		return
	}
	now := b.clock.Now()
	b.win.add(now, now-start, units)
}

// current returns the snapshot for the bucket now falls in, taking it
// at the bucket's first request.
func (b *BBR) current(now int64) *snap {
	if s := b.snap.Load(); now >= s.from && now < s.until {
		return s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.snap.Load()
	if now < s.from || now >= s.until {
		s = b.win.snapshot(now)
		b.snap.Store(s)
	}
	return s
}

// Refund gives nothing back: BBR charges no quota, and an admission's
// slot goes back with its Lease (End it EndIgnored for work not done).
// It fails only for a cost below 1.
func (b *BBR) Refund(_ context.Context, _ string, cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", core.ErrInvalidCost, cost)
	}
	return nil
}

// BBRStats is a BBR limiter's state, for debug pages and metrics.
type BBRStats struct {
	// CPU is the signal's reading.
	CPU float64
	// InFlight is the units admitted and not yet ended.
	InFlight int
	// Limit is the bound on InFlight for Normal priority while shedding.
	Limit int
	// MaxThroughput is the most units completed in one bucket of the
	// window, per second.
	MaxThroughput float64
	// MinLatency is the least mean latency of a bucket of the window.
	MinLatency time.Duration
	// Shedding reports whether the limit applies now: the CPU is past the
	// threshold, or the cool-off has not ended.
	Shedding bool
}

// Stats returns the limiter's state now.
func (b *BBR) Stats() BBRStats {
	now := b.clock.Now()
	s := b.current(now)
	cpu := b.cpu()
	return BBRStats{CPU: cpu, InFlight: int(b.inFlight.Load()), Limit: int(s.bound),
		MaxThroughput: float64(s.maxPass) * float64(time.Second) / float64(b.win.width),
		MinLatency:    time.Duration(s.minRT),
		Shedding:      cpu >= b.threshold || now < b.coolUntil.Load()}
}

// Close stops the CPU reader NewBBR started, if any. The limiter still
// decides, on the last reading.
func (b *BBR) Close() error {
	if b.own != nil {
		return b.own.Close()
	}
	return nil
}
