package overloadsim

import "math"

// speed is the share of a core each request in flight gets when shared.
func (s *sim) speed() float64 {
	return min(1, float64(s.workers)/float64(max(1, s.busy)))
}

// nextDone is when the first request in service ends (MaxInt64: none).
// Shared, the speed holds until the next event, which calls it again.
func (s *sim) nextDone() int64 {
	switch {
	case len(s.run) == 0:
		return math.MaxInt64
	case !s.cfg.Shared:
		return s.run[0].finish
	}
	left := max(0, float64(s.run[0].finish)-s.served)
	return s.lastT + int64(math.Ceil(left/s.speed()))
}

// closeBin ends the bin that ends at t: its capacity and the limit then.
func (s *sim) closeBin(t int64) {
	i := (t - 1) / s.binNs
	if i < 0 || int(i) >= len(s.res.Bins) {
		return
	}
	b := &s.res.Bins[i]
	b.Capacity = float64(s.availNs-s.binAvail) / float64(s.cfg.MeanService)
	b.Limit = s.ctrl.Limit(t)
	s.binAvail = s.availNs
}
