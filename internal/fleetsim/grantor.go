package fleetsim

import "time"

// store is the global store (in region 0) as a grantor: an ask charges
// k = min(s, available) to the shared state when it arrives.
type store struct {
	f     *fleet
	st    state
	until map[*holder]time.Duration // when each holder's lease ends
}

func newStore(f *fleet) *store {
	return &store{f: f, st: newState(f.cfg.Limit, 0, true), until: map[*holder]time.Duration{}}
}

func (s *store) take(h *holder, n int, end time.Duration, _ float64, reply func([]grant, int)) {
	now := s.f.now
	lim := s.f.cfg.Limit
	g := grant{chargedAt: now, limitEnd: forever, window: lim.windowOf(now)}
	if lim.Algorithm == FixedWindow {
		g.limitEnd = lim.windowEnd(g.window)
	}
	s.until[h] = min(end, g.limitEnd)
	g.units = min(n, s.st.available(now))
	s.st.take(now, g.units)
	reply([]grant{g}, countUntil(s.until, now))
}

func (s *store) giveBack(g grant, units int) { s.st.giveBack(s.f.now, units, g.window) }

func (s *store) delay(h *holder) time.Duration { return s.f.delay(h.region, 0) }

// countUntil counts the holders whose lease has not ended.
func countUntil(m map[*holder]time.Duration, now time.Duration) int {
	n := 0
	for _, t := range m {
		if now < t {
			n++
		}
	}
	return n
}

// regional is a region's grantor: a holder of leases from the global
// store (length RegionLease, sized by its instances' reported rates)
// that carves its units into shorter leases for its instances, each
// ending no later than the lease its units came from. Like the global
// store it answers an ask at once with what it holds, maybe nothing; the
// ask makes it renew its own lease when that runs low.
type regional struct {
	holder
	until map[*holder]time.Duration
	rates map[*holder]float64
}

func newRegional(f *fleet, region int, up grantor) *regional {
	r := &regional{until: map[*holder]time.Duration{}, rates: map[*holder]float64{}}
	r.holder = holder{f: f, up: up, region: region, lease: f.cfg.RegionLease}
	r.holder.rate = r.regionRate
	r.holder.onReply = func() {}
	return r
}

// regionRate is the sum of the rates its live holders last reported.
func (r *regional) regionRate() float64 {
	sum := 0.0
	for h, t := range r.until {
		if r.f.now < t {
			sum += r.rates[h]
		}
	}
	return sum
}

func (r *regional) take(h *holder, n int, end time.Duration, rate float64, reply func([]grant, int)) {
	r.until[h], r.rates[h] = end, rate
	reply(r.carve(n), countUntil(r.until, r.f.now))
	r.renew()
}

// carve takes up to n units from the regional leases, earliest end first.
func (r *regional) carve(n int) []grant {
	var gs []grant
	for _, l := range r.lots {
		if n == 0 {
			break
		}
		if l.units == 0 || r.f.now >= l.end {
			continue
		}
		k := min(n, l.units)
		l.units -= k
		n -= k
		gs = append(gs, grant{units: k, chargedAt: l.chargedAt, limitEnd: l.end, window: l.window, parent: l})
	}
	if gs == nil {
		gs = []grant{{}}
	}
	return gs
}

// giveBack takes back an instance's unspent units: into the regional
// lease they came from while it lasts, else on to the global store.
func (r *regional) giveBack(g grant, units int) {
	p := g.parent
	if !r.dead && r.f.now < p.end {
		p.units += units
		return
	}
	d := r.up.delay(&r.holder)
	r.f.call(d)
	r.f.after(d, func() { r.up.giveBack(p.grant, units) })
}

func (r *regional) delay(*holder) time.Duration { return r.f.cfg.Local }
