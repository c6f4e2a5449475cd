package overload

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// The defaults of AdaptiveConfig's fields, each used when the field is
// zero.
const (
	// defaultMinLimit is the floor, and where the limit starts: two
	// requests in flight, so that the first latencies, the first
	// baseline, are measured with hardly any queue however small the
	// service (started at 20, a service on one core measured 20 requests
	// sharing it and kept that as its baseline). From there the slow
	// start doubles the limit per window while it binds and the latency
	// stays at the baseline (see estimator.close). The floor keeps
	// latencies coming to measure however slow the service. On one core
	// (the simulation's shared-core server, seed 1), a floor of 1 kept
	// p99 at 1.3-1.5 × the unloaded one under overload but served 69 %
	// of the capacity at 2× and refused 34 % at 0.8×; a floor of 2
	// serves 89-95 % at 2× to 10× with p99 2.2-2.4 × and refuses 11 %
	// at 0.8× (a core shared by two requests at a time has a queue that
	// no latency-led limit can tell from overload). A floor of 4 held 4
	// requests sharing one core, p99 3.5-4.2 ×. With two or more cores
	// the floor is seldom reached.
	defaultMinLimit = 2
	// defaultMaxLimit is the ceiling, as in Envoy's filter and Netflix's
	// Vegas limit: a bound on the queue a service can be handed before
	// the first latencies arrive.
	defaultMaxLimit = 1000
	// defaultTolerance is how much slower than the baseline the mean
	// latency may be before the limit falls: 1.1, so the gradient
	// settles the limit where about a tenth of the requests in flight
	// wait (the service's capacity plus 10 %: every worker busy, a short
	// queue), and under a sustained overload the knee holds it at 1 +
	// 0.55 × (tolerance − 1) times the knee (1.055: see atKnee). Lower
	// tolerances, tried in the queueing model (adaptive_sim_test.go),
	// let noise cut the limit below the capacity now and then (1.05
	// lost up to 4.5 % of the goodput at 2×); higher ones hold a longer
	// queue and the latency that comes with it.
	defaultTolerance = 1.1
)

// AdaptiveConfig configures NewAdaptive. Its zero value means the
// defaults, which need no tuning.
type AdaptiveConfig struct {
	// Clock times requests (nil: core.SystemClock). Latencies are kept in
	// nanoseconds, so sub-millisecond services are measured as finely as
	// the clock reads.
	Clock core.Clock
	// InitialLimit is the limit before any latency is measured (0:
	// MinLimit). It must be within [MinLimit, MaxLimit]. A
	// higher start skips some of the slow start's doublings, but its
	// first baseline is measured with that many in flight.
	InitialLimit int
	// MinLimit is the floor of the limit (0: 2, or MaxLimit if lower), at
	// least 1.
	MinLimit int
	// MaxLimit is the ceiling of the limit (0: 1000, or MinLimit if
	// higher).
	MaxLimit int
	// Tolerance is the most the mean latency may exceed the baseline by,
	// as a factor, before the limit falls (0: 1.1); from 1.01 to 10.
	Tolerance float64
}

// Adaptive is an adaptive concurrency limit: a core.Limiter that admits a
// request while fewer than the limit are in flight, and moves the limit
// with the latencies it measures, so that the service runs at its
// capacity with a short queue, whatever that capacity is and however it
// changes. See the package documentation for the algorithm.
//
// The limit is global: every key shares it. A request's Priority
// (PriorityOf its context) sets how full it may find the service,
// counting the requests in flight of its priority and higher ones: a
// Normal request is admitted while they are fewer than the limit, a
// Critical one (or higher) while fewer than 4/3 of it (or of the mean of
// the last 8 windows' limits, if higher: a dip of the limit does not
// shed critical requests), a Sheddable one 2/3, and any lower priority
// 1/3. Under overload the lowest priority is thus shed first, a lower
// class in flight never makes a higher one shed, and critical traffic
// has room no other class may fill. Within a priority, Allow and
// AcquireKey share the room the higher ones leave fairly between tenants
// (keys) once it is more than 3/4 full; Acquire takes no key and does
// not.
//
// It is safe for concurrent use. Admission takes no lock; the end of a
// timed request (all of them under a limit below 128, a sample above)
// takes a short one to add its latency to the current window.
type Adaptive struct {
	// The admission path's state, apart from the estimator's lock, in
	// three groups 64 bytes apart (so on distinct cache lines): what every
	// admission reads and a window writes; the slots held, which every
	// admission and end writes; the shed counts, which refusals write.
	limit   atomic.Int64 // the limit in force, published by the estimator
	busy    atomic.Bool  // this window: in flight reached half the limit
	refused atomic.Bool  // this window: a request was refused
	latency atomic.Int64 // the last window's mean latency, ns (0: none yet)
	baseNs  atomic.Int64 // the baseline, ns, for Stats
	critLim atomic.Int64 // the mean limit of the last windows (see critWindows)
	_       [64]byte
	held    [ranks]atomic.Uint64 // slots in flight and admissions by rank (see acquire)
	_       [64]byte
	shed    [3]atomic.Int64
	_       [64]byte

	clock core.Clock
	pool  sync.Pool // of *leaseEnd (see Allow)
	max   int64
	fair  fairness

	mu   sync.Mutex
	est  estimator
	lims limitRing // under mu
}

var _ core.Limiter = (*Adaptive)(nil)

// NewAdaptive returns an adaptive concurrency limit configured by c.
func NewAdaptive(c AdaptiveConfig) (*Adaptive, error) {
	if c.Clock == nil {
		c.Clock = core.SystemClock
	}
	if c.MinLimit == 0 {
		c.MinLimit = defaultMinLimit
		if c.MaxLimit > 0 && c.MaxLimit < c.MinLimit {
			c.MinLimit = c.MaxLimit
		}
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = max(defaultMaxLimit, c.MinLimit)
	}
	if c.InitialLimit == 0 {
		c.InitialLimit = c.MinLimit
	}
	if c.Tolerance == 0 {
		c.Tolerance = defaultTolerance
	}
	switch {
	case c.MinLimit < 1:
		return nil, fmt.Errorf("overload: MinLimit must be >= 1 (0 for the default, %d), got %d", defaultMinLimit, c.MinLimit)
	case c.MaxLimit < c.MinLimit || c.MaxLimit > math.MaxInt32:
		return nil, fmt.Errorf("overload: MaxLimit must be from MinLimit (%d) to %d (0 for the default, %d), got %d", c.MinLimit, math.MaxInt32, defaultMaxLimit, c.MaxLimit)
	case c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit:
		return nil, fmt.Errorf("overload: InitialLimit must be from MinLimit (%d) to MaxLimit (%d) (0 for MinLimit), got %d", c.MinLimit, c.MaxLimit, c.InitialLimit)
	case !(c.Tolerance >= 1.01 && c.Tolerance <= 10): // NaN fails both
		return nil, fmt.Errorf("overload: Tolerance must be from 1.01 to 10 (0 for the default, %v), got %v", defaultTolerance, c.Tolerance)
	}
	a := &Adaptive{clock: c.Clock, max: int64(c.MaxLimit)}
	a.fair.seed = maphash.MakeSeed()
	a.est = estimator{
		min: float64(c.MinLimit), max: float64(c.MaxLimit), tol: c.Tolerance,
		limit: float64(c.InitialLimit), winStart: c.Clock.Now(), slow: true,
	}
	a.limit.Store(int64(c.InitialLimit))
	a.pool.New = func() any { return new(leaseEnd) }
	return a, nil
}

// Allow admits the request if the limit allows its priority (PriorityOf
// ctx) cost more slots, and its tenant, key, its fair share of them: the
// limit protects the whole service, and once a priority below Critical
// holds more than 3/4 of its threshold a key may hold at most ceil(the
// room the higher priorities leave / keys of the priority in flight), so
// that one key flooding the service is shed before the others (the keys
// in flight are told apart in a table of 128 entries; a key that finds
// none free near its hash is admitted by the threshold alone). An
// admission's Lease holds the slots until it ends; its
// End measures the request's latency for the limit (core.EndDone), counts
// it as a drop (core.EndDropped: a sign of overload), or gives the slots
// back unmeasured (core.EndIgnored). A refusal has Shed set and a
// RetryAfter of when enough slots are expected to free, at least 1 ms.
//
// Decision.Limit is a core.Concurrency limit named "adaptive" whose
// Events is the current limit; Remaining is how many more cost-1
// requests of the same priority would be admitted now. A cost below 1,
// or above MaxLimit (never admissible), is an error wrapping
// core.ErrInvalidCost.
func (a *Adaptive) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	if cost < 1 || int64(cost) > a.max {
		return core.Decision{}, a.costError(cost)
	}
	p := PriorityOf(ctx)
	slot := a.fair.slotOf(key)
	tok, why := a.acquire(p, int64(cost), slot)
	if why != admitted {
		return a.refusal(p, int64(cost), slot, why), nil
	}
	e := a.pool.Get().(*leaseEnd)
	e.tok = tok
	lim := a.limit.Load()
	return core.Decision{
		Allowed:    true,
		Limit:      adaptiveLimit(lim),
		Remaining:  int(max(0, threshold(a.limitFor(p, lim), p)-a.heldFrom(rank(p)))),
		ResetAfter: a.turnover(),
		Lease:      core.LeaseOf(e, e.gen.Load()),
	}, nil
}

// leaseEnd is Allow's record of an admission (a core.Holder): the Token
// its Lease ends. The records are pooled, so that Allow allocates
// nothing; the generation makes a stale Lease (ended already, or a copy
// of one) end nothing, even once its record serves another request.
type leaseEnd struct {
	gen atomic.Uint64
	tok Token
}

// EndLease ends the Token of generation gen, once.
func (e *leaseEnd) EndLease(_ context.Context, gen uint64, how core.Ending) error {
	if !e.gen.CompareAndSwap(gen, gen+1) {
		return nil
	}
	tok := e.tok
	e.tok = Token{}
	tok.a.pool.Put(e)
	tok.End(how)
	return nil
}

// Refund gives cost slots back without a Lease, never below none in
// flight for the priority of ctx (nor below none held by key's tenant),
// and measures nothing. Use a Decision's Lease or Refund for a request,
// not both: a Lease ended after a Refund gives its slots back again.
// Ending the Lease with core.EndIgnored is the usual way to undo an
// admission. It errors only for a cost Allow would refuse as invalid.
func (a *Adaptive) Refund(ctx context.Context, key string, cost int) error {
	if cost < 1 || int64(cost) > a.max {
		return a.costError(cost)
	}
	r := rank(PriorityOf(ctx))
	if r < rankCritical {
		if j, _ := a.fair.find(tagOf(a.fair.slotOf(key), r)); j >= 0 {
			a.fair.refund(uint8(j+1), r, int64(cost))
		}
	}
	h := &a.held[r]
	for {
		w := h.Load()
		if h.CompareAndSwap(w, w-min(w&countMask, uint64(cost))) {
			return nil
		}
	}
}

func (a *Adaptive) costError(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%w: cost must be >= 1, got %d", core.ErrInvalidCost, cost)
	}
	return fmt.Errorf("%w: cost %d, at most %d slots under the adaptive limit", core.ErrCostTooLarge, cost, a.max)
}

// adaptiveLimit is the core.Limit a decision carries for limit n: the
// period is core.InFlight's one-second hint, which the adapters show as
// the policy's window.
func adaptiveLimit(n int64) core.Limit {
	return core.Limit{Events: int(n), Period: time.Second, Burst: int(n), Name: "adaptive", Algorithm: core.Concurrency}
}
