package fleetsim

// exact is strategy 1: one store in region 0 decides every request, one
// round trip each. The store's decision is exact; the instance lets the
// request through when the reply arrives, one one-way delay later.
type exact struct {
	f  *fleet
	st state
}

func newExact(f *fleet) *exact {
	return &exact{f: f, st: newState(f.cfg.Limit, 0, true)}
}

func (e *exact) request(inst int) {
	f := e.f
	start := f.now
	d := f.delay(f.regionOf(inst), 0)
	f.call(d)
	f.after(d, func() {
		ok := e.st.available(f.now) >= 1
		if ok {
			e.st.take(f.now, 1)
		}
		charged := f.now
		f.after(d, func() {
			if ok {
				f.admit(inst, charged, f.now-start)
			} else {
				f.refuse(f.now - start)
			}
		})
	})
}
