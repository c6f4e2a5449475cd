package overload

// The admission classes of Adaptive: each priority's rank, the slots the
// ranks hold, and the thresholds they are admitted under.

// The ranks of the priorities, each with its own count of slots held:
// below Sheddable, Sheddable, Normal, Critical and above.
const (
	rankLow = iota
	rankSheddable
	rankNormal
	rankCritical
	ranks
)

// rank is p's rank.
func rank(p Priority) int {
	switch {
	case p >= Critical:
		return rankCritical
	case p < Sheddable:
		return rankLow
	}
	return int(p) - int(Sheddable) + rankSheddable
}

// A rank's word counts the slots it holds in its low countBits and its
// admissions above them, so that one compare-and-swap both admits a
// request and gives it its turn to be timed (sampleEvery).
const (
	countBits    = 40
	countMask    = 1<<countBits - 1
	oneAdmission = 1 << countBits
)

// heldFrom is the slots held by ranks r and above.
func (a *Adaptive) heldFrom(r int) int64 {
	n := int64(0)
	for i := r; i < ranks; i++ {
		n += int64(a.held[i].Load() & countMask)
	}
	return n
}

// heldBelow is the slots held by the ranks below r.
func (a *Adaptive) heldBelow(r int) int64 {
	n := int64(0)
	for i := range r {
		n += int64(a.held[i].Load() & countMask)
	}
	return n
}

// critWindows is how many windows' limits the critical threshold is
// taken from: their mean, when above the limit in force. The limit moves
// window by window (by a third now and then, with the noise of a
// window's latencies), and critical requests arrive in bursts of their
// own: under a limit that dipped for a few windows, 4/3 of it can fall
// below what critical traffic alone holds for a moment, and critical
// requests were shed while the lower classes were being shed anyway
// (at 3× with a fifth critical, one seed in four, the whole of a 100 ms
// bin's admissions then counted as priority inversions). The mean of
// the last 8 windows (16 latencies or more) rides over such a dip. A
// hold on the highest of them did too, but where critical requests are
// the whole load it lagged the limit's falls long enough for the
// estimator to cut it to the floor (goodput 31–48 % at 2×); the mean
// lags by a few windows (a step to 3× met the goals 300–400 ms later,
// not at once).
const critWindows = 8

// limitRing holds the limits of the last critWindows windows.
type limitRing struct {
	lims [critWindows]int64
	next int
}

// add records a window's limit and returns the mean of the last
// critWindows (0 for the windows not yet closed).
func (r *limitRing) add(lim int64) int64 {
	r.lims[r.next] = lim
	r.next = (r.next + 1) % critWindows
	sum := int64(0)
	for _, l := range r.lims {
		sum += l
	}
	return sum / critWindows
}

// limitFor is the limit priority p's threshold is taken from: the limit
// in force, or for Critical and above the recent windows' mean if higher.
func (a *Adaptive) limitFor(p Priority, lim int64) int64 {
	if p >= Critical {
		return max(lim, a.critLim.Load())
	}
	return lim
}

// threshold is how many slots its rank and those above may hold when a
// request of priority p is admitted under limit lim (see acquire): the
// limit for Normal, a third more for Critical (and above; at least one
// more), two thirds for Sheddable and one third below; at least one.
// Under overload the service fills to the highest threshold of the
// traffic it gets, so the lower classes stop being admitted first, and
// critical requests have room beyond what any other class may fill. Since the limit follows the
// latency of what is admitted, critical traffic that uses its room
// raises the latency, and the limit falls: the lower classes make way.
func threshold(lim int64, p Priority) int64 {
	switch {
	case p >= Critical:
		return max(lim+1, lim*4/3)
	case p == Normal:
		return lim
	}
	thirds := max(3-(int(Normal)-int(p)), 1)
	return max(1, lim*int64(thirds)/3)
}

// class is the index of p's shed counter: below Normal, Normal, above.
func class(p Priority) int {
	switch {
	case p < Normal:
		return 0
	case p == Normal:
		return 1
	}
	return 2
}
