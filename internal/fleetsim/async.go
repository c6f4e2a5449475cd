package fleetsim

// async is strategy 4, modelled on gubernator's GLOBAL behaviour: every
// instance decides from its own copy of the key's state at once, applies
// its admissions to that copy, and sends the hits it admitted to the
// key's owner (in region 0) SyncEvery after the first unsent one. The
// owner applies them and, SyncEvery after the first change, sends its
// state to every instance, which replaces its copy with it. The owner
// charges at most what is available (the state never goes below empty:
// hits beyond it are forgotten, not carried as a debt), and instances
// overshoot for as long as their copies are stale.
type async struct {
	f     *fleet
	owner state
	dirty bool
	peers []asyncPeer
}

type asyncPeer struct {
	view    state
	pending int
}

func newAsync(f *fleet) *async {
	a := &async{f: f, owner: newState(f.cfg.Limit, 0, true)}
	a.peers = make([]asyncPeer, f.cfg.Regions*f.cfg.Instances)
	for i := range a.peers {
		a.peers[i].view = a.owner
	}
	return a
}

func (a *async) request(inst int) {
	f := a.f
	p := &a.peers[inst]
	if p.view.available(f.now) < 1 {
		f.refuse(0)
		return
	}
	p.view.take(f.now, 1)
	f.admit(inst, f.now, 0)
	p.pending++
	if p.pending == 1 {
		f.after(f.cfg.SyncEvery, func() { a.sync(inst) })
	}
}

// sync sends inst's unsent hits to the owner.
func (a *async) sync(inst int) {
	f := a.f
	p := &a.peers[inst]
	hits := p.pending
	p.pending = 0
	d := f.delay(f.regionOf(inst), 0)
	f.call(d)
	f.after(d, func() {
		k := min(hits, a.owner.available(f.now))
		a.owner.take(f.now, k)
		if !a.dirty {
			a.dirty = true
			f.after(f.cfg.SyncEvery, a.broadcast)
		}
	})
}

// broadcast sends the owner's state to every instance.
func (a *async) broadcast() {
	f := a.f
	a.dirty = false
	snap := a.owner
	for i := range a.peers {
		i := i
		f.after(f.delay(0, f.regionOf(i)), func() {
			a.peers[i].view = snap
		})
	}
}
