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
