package main

import (
	"cmp"
	"slices"
	"time"

	"gonum.org/v1/plot/plotter"
)

// stats sums up one result.
type stats struct {
	requests, admitted, refused int
	units                       int // cost admitted
	maxPerPeriod                int // the most cost that proceeds in any period-long window
	delayed                     int // admitted requests that must wait
	meanDelay, maxDelay         time.Duration
}

func (r *result) stats() stats {
	s := stats{requests: len(r.outcomes)}
	var proceed []outcome // admitted, by when they proceed
	var sum time.Duration
	for _, o := range r.outcomes {
		if !o.allowed {
			s.refused++
			continue
		}
		s.admitted++
		s.units += o.cost
		proceed = append(proceed, o)
		sum += o.delay
		s.maxDelay = max(s.maxDelay, o.delay)
		if o.delay > 0 {
			s.delayed++
		}
	}
	if s.admitted > 0 {
		s.meanDelay = sum / time.Duration(s.admitted)
	}
	s.maxPerPeriod = maxInWindow(proceed, limit.Period)
	return s
}

// maxInWindow is the most cost that proceeds (arrival plus delay) within
// any half-open window [t, t+period). The busiest window can always be
// moved right until it starts at some request, so trying each request as
// the start, with a second index for the window's end, is exact.
func maxInWindow(outs []outcome, period time.Duration) int {
	at := func(o outcome) time.Duration { return o.at + o.delay }
	os := slices.Clone(outs)
	slices.SortStableFunc(os, func(a, b outcome) int { return cmp.Compare(at(a), at(b)) })
	best, sum, end := 0, 0, 0
	for i := range os {
		for end < len(os) && at(os[end]) < at(os[i])+period {
			sum += os[end].cost
			end++
		}
		best = max(best, sum)
		sum -= os[i].cost
	}
	return best
}

// bins counts admitted and refused requests per bin of width, over length,
// by arrival.
func (r *result) bins(width time.Duration) (admitted, refused []float64) {
	n := int((r.shape.length + width - 1) / width)
	admitted, refused = make([]float64, n), make([]float64, n)
	for _, o := range r.outcomes {
		i := min(int(o.at/width), n-1)
		if o.allowed {
			admitted[i]++
		} else {
			refused[i]++
		}
	}
	return admitted, refused
}

// slidingCost is, every step over the traffic's length, the cost that
// proceeded within the period up to then: (t-period, t].
func (r *result) slidingCost(step time.Duration) plotter.XYs {
	var pts plotter.XYs
	for t := time.Duration(0); t <= r.shape.length; t += step {
		sum := 0
		for _, o := range r.outcomes {
			if at := o.at + o.delay; o.allowed && at > t-limit.Period && at <= t {
				sum += o.cost
			}
		}
		pts = append(pts, plotter.XY{X: t.Seconds(), Y: float64(sum)})
	}
	return pts
}

// maxCost is the largest cost among the requests.
func maxCost(outs []outcome) int {
	m := 0
	for _, o := range outs {
		m = max(m, o.cost)
	}
	return m
}
