package overload

import (
	"math/bits"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Token is one admission by Acquire or AcquireKey: the slots a request
// holds until End. It is a value, so admitting with them allocates
// nothing. The
// zero Token holds nothing and its End does nothing.
//
// End a Token exactly once, as a semaphore is released once: a copy
// ended twice gives its slots back twice, and the limit then admits
// more than it says (or, once a priority gave back more than it held,
// none of that priority) until the process restarts. Where that contract
// cannot be kept (adapters, code that may end a request from several
// places), use Allow, whose Lease ends at most once.
type Token struct {
	// Four fields at most, so that the compiler keeps a Token in
	// registers rather than copying it through memory.
	a       *Adaptive
	start   int64
	sampled bool   // timed: its end feeds the limit
	spec    uint64 // cost | rank<<32 | tenant entry plus one<<40 (see fairness)
}

// The fields of a Token's spec.
const (
	specRank = 32
	specSlot = 40
)

func (t Token) cost() int64 { return int64(t.spec & (1<<specRank - 1)) }
func (t Token) rank() int   { return int(t.spec >> specRank & 0xff) }
func (t Token) slot() uint8 { return uint8(t.spec >> specSlot) }

// Acquire is Allow's admission without the Decision and its Lease: it
// reports whether a request of priority p may hold cost more slots now,
// and if so returns its Token. A refusal counts as shed, as Allow's does.
// A cost below 1 or above MaxLimit is never admitted (and not counted).
//
// Every admission under a limit below 128 is timed (it reads the clock,
// and its end feeds the limit); above, one in 2 to 8 (see sampleEvery),
// taken in turn, so that a window still measures 128 or more while most
// admissions read no clock.
func (a *Adaptive) Acquire(p Priority, cost int) (Token, bool) {
	tok, v := a.acquire(p, int64(cost), 0) // small enough to inline
	return tok, v == admitted
}

// AcquireKey is Acquire for a request of tenant key: as Allow, it shares
// the service fairly between keys, with no allocation.
func (a *Adaptive) AcquireKey(p Priority, key string, cost int) (Token, bool) {
	tok, v := a.acquire(p, int64(cost), a.fair.slotOf(key))
	return tok, v == admitted
}

// verdict is why acquire admitted or refused a request.
type verdict uint8

const (
	admitted  verdict = iota
	overLimit         // the threshold of its priority
	overShare         // its tenant's fair share (see fairness)
	badCost           // below 1 or above MaxLimit: never admitted, not counted
)

// acquire admits a request of priority p, cost c and tenant t (0: none)
// if its priority's threshold, and its tenant's share, allow.
//
// A priority's threshold counts the slots held by its rank and those
// above, not those below: a lower class in flight never makes a higher
// one shed (it is not replaced as it ends), so a higher request is shed
// only once no lower one is admitted, however the limit moved. While a
// higher class takes the room of lower ones in flight, the service
// holds more than the limit for a turnover; the latency that adds
// lowers the limit if it lasts.
func (a *Adaptive) acquire(p Priority, c int64, t tenant) (Token, verdict) {
	if c < 1 || c > a.max {
		return Token{}, badCost
	}
	lim := a.limit.Load()
	th := threshold(a.limitFor(p, lim), p)
	r := rank(p)
	own := &a.held[r]
	fair := t != 0 && r < rankCritical && th < fairMax
	var tag uint64
	if fair {
		tag = tagOf(t, r)
	}
	var turn uint64
	var tot int64 // held by its rank and above, once admitted
	for {
		above := a.heldFrom(r + 1)
		w := own.Load()
		n := int64(w & countMask)
		if above+n+c > th {
			a.refuse(p)
			return Token{}, overLimit
		}
		if fair {
			if held, share := a.fair.share(tag, r, above+n+c, th, above); held+c > share {
				a.refuse(p)
				return Token{}, overShare
			}
		}
		if own.CompareAndSwap(w, w+oneAdmission+uint64(c)) {
			turn, tot = w>>countBits+1, above+n+c
			break
		}
	}
	tok := Token{a: a, spec: uint64(c) | uint64(r)<<specRank}
	// Tenants are tracked from half the threshold, so that a service with
	// room pays nothing for them; the requests admitted before end within
	// a latency of the service filling up, and meanwhile the shares are
	// lenient.
	if fair && 2*tot >= th {
		tok.spec |= uint64(a.fair.take(tag, r, c)) << specSlot
	}
	// The limit binds only when the service is at least half full: below
	// that, latencies say nothing about whether more would fit.
	if !a.busy.Load() && (2*tot >= lim || 2*(tot+a.heldBelow(r)) >= lim) {
		a.busy.Store(true)
	}
	if k := sampleEvery(lim); k == 1 || turn&uint64(k-1) == 0 {
		tok.start, tok.sampled = a.clock.Now(), true
	}
	return tok, admitted
}

// sampleEvery is how many admissions under limit lim share one that is
// timed: all of them below 128, then one in 2, 4, … 2^k for a limit from
// 2^(k+6). A window lasts two latencies, in which about twice the limit
// end (Little's law), so a window still measures 128 to 256 of them: as
// many as the estimator needs, while the others cost no clock read (on
// the machines measured, the two reads of a timed request cost more than
// the rest of its admission and end together) and take no lock.
func sampleEvery(lim int64) int64 {
	return 1 << max(0, bits.Len64(uint64(lim))-7)
}

// End gives the token's slots back and tells the limit how the request
// ended: core.EndDone adds its latency (from Acquire to now) to the
// current window, core.EndDropped counts a drop, a sign of overload
// whatever its latency, and core.EndIgnored measures nothing. Under a
// limit of 128 or more, only a sample of the requests is measured (see
// Acquire), the others' End only gives their slots back.
func (t Token) End(how core.Ending) {
	a := t.a
	if a == nil {
		return
	}
	c, r := t.cost(), t.rank()
	if slot := t.slot(); slot != 0 {
		a.fair.give(slot, r, c)
	}
	a.held[r].Add(-uint64(c)) // its admission stays counted
	if how == core.EndIgnored || !t.sampled {
		return
	}
	now := a.clock.Now()
	a.mu.Lock()
	if a.est.add(t.start, now, how == core.EndDropped) {
		// A refusal means the limit binds too, for the class refused,
		// however few are in flight.
		refused := a.refused.Swap(false)
		a.est.close(now, a.busy.Swap(false) || refused, refused)
		lim := a.est.published()
		a.limit.Store(lim)
		a.critLim.Store(a.lims.add(lim))
		a.latency.Store(int64(a.est.last))
		a.baseNs.Store(int64(a.est.base))
	}
	a.mu.Unlock()
}

func (a *Adaptive) refuse(p Priority) {
	if !a.refused.Load() {
		a.refused.Store(true)
	}
	a.shed[class(p)].Add(1)
}

// refusal is the Decision for a request of priority p, cost and tenant
// t refused now (why). Its RetryAfter is when enough slots should have
// freed for it: the requests of its rank and above end at about their
// number per latency (Little's law), so the slots it lacks free in
// lacking × latency / those in flight; for a tenant over its share, its
// own requests must free them (fairWait).
func (a *Adaptive) refusal(p Priority, cost int64, t tenant, why verdict) core.Decision {
	lim := a.limit.Load()
	r := rank(p)
	above := a.heldFrom(r + 1)
	n := above + int64(a.held[r].Load()&countMask)
	th := threshold(a.limitFor(p, lim), p)
	turn := a.turnover()
	var wait time.Duration
	switch {
	case why == overShare:
		held, share := a.fair.share(tagOf(t, r), r, n+cost, th, above)
		wait = fairWait(turn, held, cost, share)
	case n > 0:
		wait = time.Duration(float64(turn) * float64(max(1, n+cost-th)) / float64(n))
	default:
		wait = turn
	}
	wait = max(wait, time.Millisecond)
	return core.Decision{
		Shed:       true,
		Limit:      adaptiveLimit(lim),
		RetryAfter: wait,
		ResetAfter: max(wait, turn),
	}
}

// turnover is the last window's mean latency, the time in which the
// requests in flight are expected to end, at least 1 ms; 1 s (as
// core.InFlight's hint) before any window has closed.
func (a *Adaptive) turnover() time.Duration {
	r := time.Duration(a.latency.Load())
	if r == 0 {
		return time.Second
	}
	return max(r, time.Millisecond)
}

// AdaptiveStats is what an Adaptive shows of its state, for metrics and
// the debug page.
type AdaptiveStats struct {
	// Limit is the limit in force.
	Limit int
	// InFlight is the slots held now.
	InFlight int
	// Baseline is the latency the service has without a queue, as
	// estimated (0 before the first window).
	Baseline time.Duration
	// Latency is the last window's mean latency (0 before the first).
	Latency time.Duration
	// Shed counts refusals by priority: [0] below Normal, [1] Normal,
	// [2] above Normal (Critical).
	Shed [3]int64
}

// Stats returns the limiter's state now.
func (a *Adaptive) Stats() AdaptiveStats {
	return AdaptiveStats{
		Limit:    int(a.limit.Load()),
		InFlight: int(a.heldFrom(rankLow)),
		Baseline: time.Duration(a.baseNs.Load()),
		Latency:  time.Duration(a.latency.Load()),
		Shed:     [3]int64{a.shed[0].Load(), a.shed[1].Load(), a.shed[2].Load()},
	}
}
