package fleetsim

import (
	"math"
	"slices"
	"time"
)

// forever is the end of a grant that no window or parent lease bounds.
const forever = time.Duration(math.MaxInt64)

// grant is a grantor's reply for some units: when they were charged to
// the global state, the latest instant they may be spent (a window's end
// or the parent lease's end) and where a refund of them goes.
type grant struct {
	units     int
	chargedAt time.Duration
	limitEnd  time.Duration
	window    int64
	parent    *lot // the regional lease they were carved from, if any
}

// lot is units a holder holds from one grant, spendable until end.
type lot struct {
	grant
	end time.Duration
}

// grantor answers lease asks and takes refunds.
type grantor interface {
	// take handles an ask arriving now for s units, from a holder whose
	// lease would end at end and whose observed rate is rate; reply may be
	// called later (a regional grantor waits for its own lease).
	take(h *holder, s int, end time.Duration, rate float64, reply func([]grant, int))
	// giveBack takes back unspent units of a grant.
	giveBack(g grant, units int)
	// delay is the one-way delay between h and the grantor.
	delay(h *holder) time.Duration
}

// holder holds leases on the key from a grantor: an instance, or a
// regional grantor holding leases from the global store.
type holder struct {
	f            *fleet
	up           grantor
	region       int
	lease        time.Duration
	lots         []*lot // by end, earliest first
	inFlight     bool
	askEnd       time.Duration // end of the lease asked for in flight
	backoffUntil time.Duration
	lastGrant    int
	holders      int // as the grantor last reported
	dead         bool
	rate         func() float64
	onReply      func() // serves whatever waited for the reply
}

// units is what the holder can still spend now.
func (h *holder) units() int {
	n := 0
	for _, l := range h.lots {
		if h.f.now < l.end {
			n += l.units
		}
	}
	return n
}

// spend takes one unit from the lease that ends first.
func (h *holder) spend() *lot {
	for _, l := range h.lots {
		if l.units > 0 && h.f.now < l.end {
			l.units--
			return l
		}
	}
	return nil
}

// size is the design's lease size: 1.25 × the observed rate × L, at least
// 1 and at most max(1, capacity / (2 × holders)).
func (h *holder) size() int {
	s := int(math.Ceil(1.25 * h.rate() * h.lease.Seconds()))
	hi := max(1, h.f.cfg.Limit.capacity()/(2*max(1, h.holders)))
	return min(max(s, 1), hi)
}

// renew asks for the next lease when the current ones have less than a
// quarter of their units or of their time left, with one ask in flight.
func (h *holder) renew() {
	if h.inFlight || h.dead || h.f.now < h.backoffUntil {
		return
	}
	u, left := 0, time.Duration(0)
	for _, l := range h.lots {
		if h.f.now < l.end {
			u += l.units
			left = max(left, l.end-h.f.now)
		}
	}
	if u == 0 || 4*u < h.lastGrant || 4*left < h.lease {
		h.ask()
	}
}

func (h *holder) ask() {
	f := h.f
	s, rate := h.size(), h.rate()
	end := f.now + h.lease
	h.inFlight, h.askEnd = true, end
	d := h.up.delay(h)
	f.call(d)
	f.after(d, func() {
		h.up.take(h, s, end, rate, func(gs []grant, holders int) {
			f.after(d, func() { h.receive(gs, holders, end) })
		})
	})
}

func (h *holder) receive(gs []grant, holders int, end time.Duration) {
	f := h.f
	h.inFlight = false
	total := 0
	for _, g := range gs {
		total += g.units
	}
	if h.dead {
		f.res.Lost += total
		return
	}
	h.holders, h.lastGrant = holders, total
	for _, g := range gs {
		if g.units == 0 {
			continue
		}
		l := &lot{grant: g, end: min(end, g.limitEnd)}
		if l.end <= f.now {
			h.refund(l) // it ended on the way: all of it goes back
			continue
		}
		i, _ := slices.BinarySearchFunc(h.lots, l.end, func(a *lot, t time.Duration) int { return int(a.end - t) })
		h.lots = slices.Insert(h.lots, i, l)
		f.at(l.end, func() { h.expire(l) })
	}
	if total == 0 {
		h.backoffUntil = f.now + f.cfg.Backoff
	}
	h.onReply()
}

// expire ends a lease: its unspent units go back to the grantor.
func (h *holder) expire(l *lot) {
	if h.dead {
		return
	}
	if i := slices.Index(h.lots, l); i >= 0 {
		h.lots = slices.Delete(h.lots, i, i+1)
	}
	h.refund(l)
}

func (h *holder) refund(l *lot) {
	if l.units == 0 {
		return
	}
	u := l.units
	l.units = 0
	d := h.up.delay(h)
	h.f.call(d)
	h.f.after(d, func() { h.up.giveBack(l.grant, u) })
}

// kill drops everything the holder holds; nothing is returned.
func (h *holder) kill() {
	h.dead = true
	h.f.res.KilledAt = h.f.now
	end := time.Duration(0)
	for _, l := range h.lots {
		h.f.res.Lost += l.units
		end = max(end, l.end)
	}
	if h.inFlight {
		end = max(end, h.askEnd)
	}
	h.lots = nil
	h.f.res.KillLeaseEnd = end
}
