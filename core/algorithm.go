package core

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Algorithm selects how a key's state turns into a decision. Every algorithm
// keeps 16 bytes of state per key in memory, except [SlidingLog] and
// [SlidingWindow] with sub-windows, which keep a log per key in a
// table of their own (see SlidingLog).
type Algorithm uint8

const (
	// TokenBucket is the default: a bucket of Burst tokens refilled at
	// Events/Period, with the arithmetic and decisions of
	// golang.org/x/time/rate's Limiter (float64 tokens). Unlike x/time/rate,
	// a clock that steps backwards never adds tokens.
	TokenBucket Algorithm = iota
	// GCRA is the generic cell rate algorithm: one theoretical arrival time
	// per key, integer nanoseconds, the same admissions as an ideal token
	// bucket with the interval rounded up to a whole nanosecond. Its
	// integer arithmetic costs a fraction of the token bucket's float
	// arithmetic per admission (BenchmarkAlgorithmAdmit: about 6 ns against
	// 35–40 on a 2-core machine), which shows when most requests are
	// admitted; choose it when matching x/time/rate's rounding does not
	// matter.
	GCRA
	// FixedWindow counts up to Events per window; windows are aligned to
	// multiples of Period since the Unix epoch. Burst is ignored. Up to
	// 2×Events can pass around a window boundary.
	FixedWindow
	// SlidingWindow is the sliding-window counter: the previous window's
	// count weighted by how much of it still overlaps the sliding period,
	// plus the current window's count, must stay within Events. Burst is
	// ignored. It assumes the previous window's requests were spread evenly.
	// [Limit.WithSubWindows] makes it count over n sub-windows instead
	// (Sentinel's LeapArray).
	SlidingWindow
	// LeakyBucket shapes instead of refusing: requests leave one interval
	// (Period/Events) apart, in the order they came, each admitted with the
	// Delay it must wait for its turn, up to the longest wait set by
	// Limit.MaxDelay (default [DefaultMaxDelay]); a request whose turn
	// would come later is refused, with RetryAfter the wait until it would
	// not. Burst is ignored: a fresh key's first request goes at once and
	// the next one interval later (Sentinel's throttling with a maximum
	// queueing time, uber-go/ratelimit's pacing). Refund gives a cancelled
	// wait's turn back.
	LeakyBucket
	// WarmUp is Guava's SmoothWarmingUp: a key that has been idle is cold
	// and starts slow, one request per Interval × cold factor, speeding up
	// to the full rate over the warm-up period; idle again, it cools back.
	// [Limit.WithWarmUp] sets the period and the cold factor (default 3). As in
	// Guava, a request is admitted when the key's next free instant has
	// come, and pays for itself by moving that instant on, so requests are
	// spaced, never bunched: Burst is ignored and Remaining is 0 or 1.
	WarmUp
	// SlidingLog is the exact sliding window: each key keeps a log of its
	// admissions (instant and cost, admissions at one instant coalesced),
	// and a request of cost c at now is admitted while the costs admitted
	// in (now−Period, now] plus c stay within Events. No window boundary
	// lets more through, and every wait is exact: RetryAfter is when enough
	// of the oldest entries have left the window for the same cost to fit,
	// ResetAfter when the newest leaves it. Burst is ignored. Refund takes
	// cost back from the newest entries.
	//
	// Memory per key: 16 bytes per entry slot, in a ring that doubles as
	// needed (from 4 slots) up to Events slots and never beyond, so a key
	// that used little holds little; plus about 190 bytes of header, LRU
	// entry, map slot and idle-index slot (BenchmarkMemoryPerKey: 255
	// bytes per key with the first ring of 4 slots), and about one byte
	// more once the table has been full (the index that finds the key that
	// loses least). Worst case per key: 190 + 16 × Events bytes.
	// Limit.MaxEntries caps the entries a key may need (default
	// [DefaultMaxEntries], 16 KiB): a Limit with more Events fails at [New];
	// raise the cap, or use SlidingWindow, whose 16-byte estimate needs no
	// log. Its state lives in a table of its own beside the 16-byte states
	// of the other algorithms, with the same capacity and [FullPolicy] (no
	// deny cache: every decision takes its shard's lock).
	SlidingLog
	// Concurrency caps the units each key has in flight: admitted and not
	// yet released. Events is the most units a key holds at once (a
	// request holds its cost, at most Events); Burst is ignored. Every
	// admission carries a [Lease] in Decision.Lease, and releasing it
	// gives the request's units back, once however often it is called;
	// Refund gives units back without a lease, never below none held (use
	// one or the other for a request, not both). Remaining is the units
	// free. No instant is known at which a unit comes back, so Period is
	// only a hint: a refused request is told RetryAfter = Period, and
	// ResetAfter is Period while any unit is in flight, 0 for a key
	// holding none (no decision reports that: an admission holds its own
	// units, and a refusal means some are held). [InFlight](n) is n
	// units with a one-second hint.
	//
	// A key with units in flight is never dropped to make room, since
	// dropping it would forget them; a key holding none is. Under
	// [FullEvictLRU] a key in flight can still be evicted: its requests
	// in flight are then forgotten and their leases give nothing back, so
	// more than Events may run until they end. A Lease's record is
	// recycled, so an admission allocates nothing; the deny cache is
	// off for this algorithm, since a release may come at any instant.
	Concurrency
)

// String returns the algorithm's name.
func (a Algorithm) String() string {
	switch a {
	case TokenBucket:
		return "token-bucket"
	case GCRA:
		return "gcra"
	case FixedWindow:
		return "fixed-window"
	case SlidingWindow:
		return "sliding-window"
	case LeakyBucket:
		return "leaky-bucket"
	case WarmUp:
		return "warm-up"
	case SlidingLog:
		return "sliding-log"
	case Concurrency:
		return "concurrency"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// state is one key's state; its meaning belongs to the algorithm.
type state struct{ a, b int64 }

// verdict is a decision without its Limit, in nanoseconds. Algorithms pass
// states and verdicts by value: a pointer passed through the interface would
// escape to the heap on every call.
//
// An admission has no RetryAfter, so retryAfter of an allowed verdict is
// the Delay before the request may proceed (LeakyBucket's wait for its
// turn; 0 for the others): a fifth field would make every decision slower
// (BenchmarkAlgorithmAdmit: GCRA 3 → 18 ns).
type verdict struct {
	allowed                bool
	remaining              int64
	retryAfter, resetAfter int64
}

// algo is an algorithm bound to one Limit. Its methods are pure functions of
// their arguments, so the same state can be decided again lock-free.
type algo interface {
	// fresh is the state of a key never seen before, at now.
	fresh(now int64) state
	// decide charges cost at now if it fits and returns the new state. A
	// denial returns s unchanged; an admission always changes it.
	decide(s state, now, cost int64) (state, verdict)
	// idleAt is the instant from which s is whole again and so carries
	// nothing: s is idle at every now >= idleAt(s) (math.MinInt64: idle
	// already). It depends on s alone, so a state that stands still keeps
	// its instant, which is what lets the store index entries by it.
	idleAt(s state) int64
	// idle reports whether s is whole again at now: now >= idleAt(s), or
	// (token bucket) a cheaper test that agrees with it for now >= the
	// state's last update and is only ever more generous before it.
	idle(s state, now int64) bool
	// refund gives cost back to s at now, never beyond whole.
	refund(s state, now, cost int64) (state, bool)
	// maxCost is the largest cost that can ever be admitted at once.
	maxCost() int64
	// spare reports whether a full table may give up s at now to make
	// room for a new key (table.reuse): a key given up comes back as new,
	// so its owner regains what s had spent, and spare holds while that
	// is at most half the quota, rounded down, and at least one unit. So
	// no key is handed back more than half its quota or a single unit, a
	// drained key keeps its state unless its quota is a single unit, and
	// a key charged once, which regains one unit, is spare whatever the
	// quota.
	spare(s state, now int64) bool
}

// ranker is implemented by the algorithms whose idle instant does not
// tell which key loses least when given up (the windows' keys share the
// instant their window ends; warm-up's keys cool long after their debt
// is paid), which a full table therefore indexes by rank as well.
type ranker interface {
	// rank orders states by what giving them up would hand back, least
	// first, for states live at one instant. It depends on s alone, so
	// that a key keeps its rank while its state stands still; an
	// admission raises it or leaves it (but see slidingWindow.rank), and
	// a refund, which may lower it, has its key indexed anew.
	rank(s state) int64
}

// spareUnits is how many units a key may have spent and still be given up
// when the table is full: half of whole, at least one.
func spareUnits(whole int64) int64 { return max(1, whole/2) }

// newAlgo returns l's algorithm, for the algorithms whose state is 16
// bytes (nil for SlidingLog, whose state lives in the extended table).
// l's settings must be valid on their own (Limit.validateSettings).
func newAlgo(l Limit) (algo, error) {
	switch l.Algorithm {
	case TokenBucket:
		rate := float64(l.Events) / l.Period.Seconds()
		return &tokenBucket{rate: rate, burst: float64(l.EffectiveBurst()), slack: 2 * rate / float64(time.Second), overdraft: l.Overdraft}, nil
	case GCRA:
		t := int64(l.Interval())
		return &gcra{interval: t, span: t * int64(l.EffectiveBurst()), burst: int64(l.EffectiveBurst())}, nil
	case FixedWindow:
		return &fixedWindow{period: int64(l.Period), events: int64(l.Events)}, nil
	case SlidingWindow:
		return &slidingWindow{period: int64(l.Period), events: int64(l.Events)}, nil
	case LeakyBucket:
		return newLeakyBucket(l)
	case WarmUp:
		return newWarmUp(l)
	case SlidingLog:
		return nil, nil // its state lives in the extended table (see New)
	case Concurrency:
		return &concurrency{events: int64(l.Events), period: int64(l.Period), gen: new(atomic.Int64)}, nil
	}
	return nil, fmt.Errorf("core: unknown algorithm %d; use TokenBucket, GCRA, FixedWindow, SlidingWindow, LeakyBucket, WarmUp, SlidingLog or Concurrency", int(l.Algorithm))
}
