package fleetsim

import "time"

// leases is strategies 2 and 3: instances spend units in memory from
// leases, taken from their region's grantor (2) or from the global
// store (3).
type leases struct {
	f         *fleet
	instances []*instance
	regions   []*regional
}

// instance is a holder that decides requests: from its leases at once,
// or, with none left and an ask in flight, when the reply arrives.
type instance struct {
	holder
	id      int
	meter   meter
	waiting []time.Duration // arrival instants of requests waiting for the reply
}

func newLeases(f *fleet) *leases {
	ls := &leases{f: f}
	st := newStore(f)
	for r := 0; r < f.cfg.Regions; r++ {
		ls.regions = append(ls.regions, newRegional(f, r, st))
	}
	for i := 0; i < f.cfg.Regions*f.cfg.Instances; i++ {
		in := &instance{id: i}
		var up grantor = st
		if f.cfg.Strategy == RegionalLeases {
			up = ls.regions[f.regionOf(i)]
		}
		in.holder = holder{f: f, up: up, region: f.regionOf(i), lease: f.cfg.Lease}
		in.holder.rate = func() float64 { return in.meter.rate(f.now) }
		in.holder.onReply = in.serveWaiting
		ls.instances = append(ls.instances, in)
	}
	if k := f.cfg.Kill; k != nil {
		ls.killWhenHolding(k.At, k.Region*f.cfg.Instances+k.Instance)
	}
	return ls
}

func (ls *leases) request(i int) {
	in := ls.instances[i]
	f := ls.f
	in.meter.add(f.now)
	if l := in.spend(); l != nil {
		f.admit(i, l.chargedAt, 0)
		in.renew()
		return
	}
	if in.inFlight {
		in.waiting = append(in.waiting, f.now)
		return
	}
	if f.now < in.backoffUntil {
		f.refuse(0)
		return
	}
	in.waiting = append(in.waiting, f.now)
	in.ask()
}

func (in *instance) serveWaiting() {
	f := in.f
	w := in.waiting
	in.waiting = in.waiting[:0]
	for _, t := range w {
		if l := in.spend(); l != nil {
			f.admit(in.id, l.chargedAt, f.now-t)
		} else {
			f.refuse(f.now - t)
		}
	}
	if len(w) > 0 {
		in.renew()
	}
}

// killWhenHolding kills instance i mid-lease: at the first millisecond
// from t on at which it holds unspent units.
func (ls *leases) killWhenHolding(t time.Duration, i int) {
	ls.f.at(t, func() {
		if ls.instances[i].units() == 0 {
			ls.killWhenHolding(t+time.Millisecond, i)
			return
		}
		ls.kill(i)
	})
}

func (ls *leases) kill(i int) {
	f := ls.f
	in := ls.instances[i]
	for _, t := range in.waiting {
		f.refuse(f.now - t)
	}
	in.waiting = nil
	in.kill()
	if g, ok := in.up.(*regional); ok {
		f.res.HolderUntil = g.until[&in.holder]
	} else if s, ok := in.up.(*store); ok {
		f.res.HolderUntil = s.until[&in.holder]
	}
	f.dead[i] = true
	f.rearm()
}

// meter counts arrivals in ten buckets of 10 ms: the rate over the last
// 100 ms.
type meter struct {
	buckets [10]int
	last    int64 // index of the newest bucket
}

const meterBucket = 10 * time.Millisecond

func (m *meter) advance(now time.Duration) {
	idx := int64(now / meterBucket)
	for m.last < idx {
		m.last++
		m.buckets[m.last%10] = 0
		if idx-m.last >= 10 {
			m.buckets = [10]int{}
			m.last = idx
		}
	}
}

func (m *meter) add(now time.Duration) {
	m.advance(now)
	m.buckets[m.last%10]++
}

func (m *meter) rate(now time.Duration) float64 {
	m.advance(now)
	n := 0
	for _, b := range m.buckets {
		n += b
	}
	return float64(n) / (10 * meterBucket).Seconds()
}
