package overloadsim

import (
	"math"
	"slices"
	"time"
)

// Served returns the share of the requests that arrived in [from, to)
// that were answered within the SLO (of class c, or of all when c < 0).
func (r *Result) Served(from, to time.Duration, c int) float64 {
	arrived, good := 0, 0
	for _, b := range r.span(from, to) {
		for k, cb := range b.Classes {
			if c < 0 || k == c {
				arrived += cb.Arrived
				good += cb.Good
			}
		}
	}
	if arrived == 0 {
		return 0
	}
	return float64(good) / float64(arrived)
}

// Inversions returns the share of the admissions in [from, to) that were
// priority inversions: a request admitted in a bin in which one of higher
// priority was shed.
func (r *Result) Inversions(from, to time.Duration) float64 {
	admitted, inverted := 0, 0
	for _, b := range r.span(from, to) {
		shedTop, any := 0, false
		for k, cb := range b.Classes {
			p := int(r.Config.Classes[k].Priority)
			if cb.Shed > 0 && (!any || p > shedTop) {
				shedTop, any = p, true
			}
		}
		for k, cb := range b.Classes {
			admitted += cb.Admitted
			if any && int(r.Config.Classes[k].Priority) < shedTop {
				inverted += cb.Admitted
			}
		}
	}
	if admitted == 0 {
		return 0
	}
	return float64(inverted) / float64(admitted)
}

// Jain returns the lowest, over the classes, of Jain's fairness index of
// the tenants' goodput in [from, to), each tenant's measured against its
// max-min fair share of its class's goodput given what it asked for: 1
// when every tenant got its fair share, 1/n when one got everything. A
// class with no goodput has no index; NaN when none has.
func (r *Result) Jain(from, to time.Duration) float64 {
	worst := math.NaN()
	for c := range r.Config.Classes {
		n := len(r.Config.Tenants)
		asked, got := make([]float64, n), make([]float64, n)
		for _, b := range r.span(from, to) {
			for t := range n {
				asked[t] += float64(b.Classes[c].TenantArrived[t])
				got[t] += float64(b.Classes[c].TenantGood[t])
			}
		}
		if j := jain(asked, got); !math.IsNaN(j) && (math.IsNaN(worst) || j < worst) {
			worst = j
		}
	}
	return worst
}

// jain is Jain's index of got[i] / fair[i], fair being the max-min fair
// split of sum(got) given the demands asked.
func jain(asked, got []float64) float64 {
	total := 0.0
	for _, g := range got {
		total += g
	}
	order := make([]int, len(asked))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpFloat(asked[a], asked[b]) })
	fair := make([]float64, len(asked))
	left := total
	for k, i := range order {
		fair[i] = math.Min(asked[i], left/float64(len(order)-k))
		left -= fair[i]
	}
	sum, squares, n := 0.0, 0.0, 0
	for i := range got {
		if fair[i] == 0 {
			continue
		}
		x := got[i] / fair[i]
		sum += x
		squares += x * x
		n++
	}
	if squares == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(n) * squares)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
