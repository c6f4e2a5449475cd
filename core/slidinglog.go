package core

import (
	"fmt"
	"math"
)

// DefaultMaxEntries is the most entries a key's log may need under
// [SlidingLog] or sub-windows unless Limit.MaxEntries says otherwise:
// 16 KiB of entries per key at most.
const DefaultMaxEntries = 1024

// maxMaxEntries bounds Limit.MaxEntries: 16 MiB of entries per key.
const maxMaxEntries = 1 << 20

// entryBytes is the memory one log entry takes.
const entryBytes = 16

// firstRing is the size of a log's first ring.
const firstRing = 4

// entry is one instant of a key's log and the cost admitted at it.
type entry struct{ at, cost int64 }

// xlog is the per-key state of the algorithms whose state does not fit in
// 16 bytes: a log of entries, oldest first, at strictly increasing instants,
// in a ring that grows as needed up to the most entries the limit can need
// (never more), and the sum of their costs. It also carries its place in
// the extended table's idle index.
//
// Memory per key: this 64-byte header, 16 bytes per slot of its ring (at
// most the entries the limit needs: Events for SlidingLog, the lesser of n
// and Events for n sub-windows), and the table's own bookkeeping (see
// [SlidingLog]).
type xlog struct {
	ring    []entry // the live entries are ring[head], ring[head+1], ... (wrapping), n of them
	head, n uint32
	sum     int64  // the costs of the live entries
	h       uint64 // the key's hash
	due     int64  // the instant the idle index holds for the key: <= its idleAt
	pos     int    // the key's place in the idle index's heap
}

// at returns a pointer to the i-th live entry, oldest first.
func (x *xlog) at(i uint32) *entry {
	j := x.head + i
	if j >= uint32(len(x.ring)) {
		j -= uint32(len(x.ring))
	}
	return &x.ring[j]
}

// newest returns the newest entry; x must not be empty.
func (x *xlog) newest() *entry { return x.at(x.n - 1) }

// windowLog decides on a log. Each admission is recorded at its instant
// rounded down to a multiple of quantum since the Unix epoch (1 ns: the
// exact log; Period/n: n sub-windows), entries at the same instant
// coalesced, and at an instant t (rounded alike) the entries in
// (t−Period, t] count. A request fits while their costs and its own stay
// within Events.
//
// A clock that steps back behind the newest entry decides at that entry's
// instant, so the log stays in order and no quota comes back.
type windowLog struct {
	period, events, quantum int64
	limit                   uint32 // the most entries a key's log can hold
}

func newWindowLog(l Limit) (*windowLog, error) {
	maxEntries := l.MaxEntries
	if maxEntries == 0 {
		maxEntries = DefaultMaxEntries
	}
	w := &windowLog{period: int64(l.Period), events: int64(l.Events), quantum: 1}
	need := w.events
	if l.Algorithm == SlidingWindow {
		n := int64(l.SubWindows)
		if w.period%n != 0 {
			return nil, fmt.Errorf("core: SubWindows %d: the period %v is not a whole number of nanoseconds times %d; pick a number of sub-windows that divides it", n, l.Period, n)
		}
		w.quantum = w.period / n
		need = min(n, need)
		if need > int64(maxEntries) {
			return nil, fmt.Errorf("core: SubWindows %d: %d events in %d sub-windows need up to %d log entries per key (%d bytes each), more than MaxEntries allows (%d); raise the cap with WithMaxEntries(%d) or use fewer sub-windows", n, l.Events, n, need, entryBytes, maxEntries, need)
		}
	} else if need > int64(maxEntries) {
		return nil, fmt.Errorf("core: SlidingLog: %d events per period need up to %d log entries per key (%d bytes each), more than MaxEntries allows (%d); raise the cap with WithMaxEntries(%d) or use SlidingWindow (with sub-windows for a closer count)", l.Events, need, entryBytes, maxEntries, need)
	}
	w.limit = uint32(need)
	return w, nil
}

func (w *windowLog) maxCost() int64 { return w.events }

// instant is the instant a decision on x at now is made at: now rounded
// down to the quantum, or x's newest entry if that is later.
func (w *windowLog) instant(x *xlog, now int64) int64 {
	t := now
	if w.quantum != 1 {
		t -= now % w.quantum // now >= 0: Keyed checks the clock's range
	}
	if x.n > 0 {
		t = max(t, x.newest().at)
	}
	return t
}

// expire drops the entries no longer counted at instant t: those at or
// before t − Period.
func (w *windowLog) expire(x *xlog, t int64) {
	cut := t - w.period
	for x.n > 0 {
		e := x.at(0)
		if e.at > cut {
			return
		}
		x.sum -= e.cost
		x.n--
		x.head++
		if x.head == uint32(len(x.ring)) {
			x.head = 0
		}
	}
	x.head = 0
}

// push records cost at instant t, no earlier than x's newest entry.
func (w *windowLog) push(x *xlog, t, cost int64) {
	x.sum += cost
	if x.n > 0 {
		if e := x.newest(); e.at == t {
			e.cost += cost
			return
		}
	}
	if x.n == uint32(len(x.ring)) {
		w.grow(x)
	}
	x.n++
	*x.newest() = entry{t, cost}
}

// grow enlarges x's full ring, doubling it up to the most entries the limit
// can need. A ring that holds that many is never full when push is called:
// every entry costs at least 1 and an admission keeps the costs within
// Events.
func (w *windowLog) grow(x *xlog) {
	size := min(max(firstRing, 2*uint32(len(x.ring))), w.limit)
	ring := make([]entry, size)
	for i := uint32(0); i < x.n; i++ {
		ring[i] = *x.at(i)
	}
	x.ring, x.head = ring, 0
}

// decide charges cost at now if it fits. It changes x only by dropping
// entries that no longer count, unless it admits.
func (w *windowLog) decide(x *xlog, now, cost int64) verdict {
	t := w.instant(x, now)
	w.expire(x, t)
	if x.sum+cost <= w.events {
		w.push(x, t, cost)
		return verdict{allowed: true, remaining: w.events - x.sum, resetAfter: t + w.period - now}
	}
	return w.refusal(x, now, cost)
}

// check is decide without the charge: it drops the entries that have left
// the window (which changes no decision) and returns the instant an
// admission would be logged at, and the verdict. A stack checks every
// layer before it charges any.
func (w *windowLog) check(x *xlog, now, cost int64) (int64, verdict) {
	t := w.instant(x, now)
	w.expire(x, t)
	if x.sum+cost <= w.events {
		return t, verdict{allowed: true, remaining: w.events - x.sum - cost, resetAfter: t + w.period - now}
	}
	return t, w.refusal(x, now, cost)
}

// refusal is the verdict for cost on x, expired to now's instant, when it
// does not fit: the oldest entries must fall out until cost fits, and the
// last of them leaves one Period after its instant.
func (w *windowLog) refusal(x *xlog, now, cost int64) verdict {
	need := x.sum + cost - w.events
	i := uint32(0)
	for freed := x.at(0).cost; freed < need; freed += x.at(i).cost {
		i++
	}
	return verdict{
		remaining:  w.events - x.sum,
		retryAfter: x.at(i).at + w.period - now,
		resetAfter: x.newest().at + w.period - now,
	}
}

// refund takes cost back from x's newest entries still counted at now,
// never below empty, and reports whether there was anything to take.
func (w *windowLog) refund(x *xlog, now, cost int64) bool {
	w.expire(x, w.instant(x, now))
	if x.n == 0 {
		return false
	}
	for cost > 0 && x.n > 0 {
		e := x.newest()
		take := min(cost, e.cost)
		e.cost -= take
		x.sum -= take
		cost -= take
		if e.cost == 0 {
			x.n--
		}
	}
	if x.n == 0 {
		x.head = 0
	}
	return true
}

// spare reports whether x may give up its place to a new key when the
// table is full: what it counts at now, which giving it up hands back, is
// at most half of Events, or one. It drops the entries that have left the
// window, which changes no decision.
func (w *windowLog) spare(x *xlog, now int64) bool {
	w.expire(x, w.instant(x, now))
	return x.sum <= spareUnits(w.events)
}

// idleAt is when x's newest entry stops counting, and x with it.
func (w *windowLog) idleAt(x *xlog) int64 {
	if x.n == 0 {
		return math.MinInt64
	}
	return x.newest().at + w.period
}

// maxSubWindows bounds Limit.SubWindows.
const maxSubWindows = 1 << 20
