package debugpage

import "math"

// numKinds is how many outcome counters a second holds: one per
// core.Outcome the package knows, and one for outcomes added to core
// later, so that they are counted somewhere rather than dropped.
const numKinds = 10

// ring counts events per second and outcome over the last len(slots)
// seconds. A slot is reused when its second comes round again: it is
// cleared when an event of a later second lands on it, and read only if
// it holds the second asked for, so no goroutine has to sweep old seconds.
//
// It is not safe for concurrent use; the Page shards and locks it.
type ring struct {
	slots []second
}

type second struct {
	sec int64 // Unix second the counts belong to
	n   [numKinds]uint32
}

func newRing(seconds int) ring {
	r := ring{slots: make([]second, seconds)}
	for i := range r.slots {
		r.slots[i].sec = math.MinInt64
	}
	return r
}

func (r *ring) slot(sec int64) *second {
	n := int64(len(r.slots))
	return &r.slots[((sec%n)+n)%n]
}

// add counts one event of kind k in second sec. An event older than the
// second its slot holds now (the clock went back by a whole window) only
// counts in the totals.
func (r *ring) add(sec int64, k int) {
	s := r.slot(sec)
	if s.sec != sec {
		if s.sec > sec {
			return
		}
		*s = second{sec: sec}
	}
	s.n[k]++
}

// sumInto adds the counts of the len(r.slots) seconds ending with now to
// dst, oldest first: dst[i] gets second now-len(r.slots)+1+i.
func (r *ring) sumInto(dst [][numKinds]uint64, now int64) {
	first := now - int64(len(r.slots)) + 1
	for i := range dst {
		sec := first + int64(i)
		s := r.slot(sec)
		if s.sec != sec {
			continue
		}
		for k, v := range s.n {
			dst[i][k] += uint64(v)
		}
	}
}

// floorSecond is the Unix second holding ns, also for instants before
// 1970.
func floorSecond(ns int64) int64 {
	s := ns / 1e9
	if ns%1e9 < 0 {
		s--
	}
	return s
}
