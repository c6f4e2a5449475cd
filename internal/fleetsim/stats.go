package fleetsim

import (
	"slices"
	"time"
)

// Windows is a run's admissions counted per aligned window of one width.
type Windows struct {
	Width  time.Duration
	Counts []int // admissions per window, by the instances' log
	Limit  int   // Events per Width, the limit's nominal share of a window
	// Bound is the documented bound for each window: what one shared
	// limiter can admit over the window widened by the run's widening
	// (Burst + Events × (Width + widening) / Period for GCRA; Events per
	// aligned period the widened window touches, for a fixed window).
	Bound []int
	// Trace is the bound computed from the run's own charges: the units
	// spent anywhere whose charge at the global state fell in the window
	// widened by the run's widening.
	Trace []int
}

// Windows counts r's admissions per aligned window of width w.
func (r *Result) Windows(w time.Duration) Windows {
	c := r.Config
	lim := c.Limit
	n := int((c.Duration + w - 1) / w)
	ws := Windows{Width: w, Counts: make([]int, n), Bound: make([]int, n), Trace: make([]int, n)}
	ws.Limit = int(int64(lim.Events) * int64(w) / int64(lim.Period))
	wide := c.widen()
	charges := make([]time.Duration, 0, len(r.Admissions))
	for _, a := range r.Admissions {
		if i := int(a.At / w); i < n {
			ws.Counts[i]++
		}
		charges = append(charges, a.ChargedAt)
	}
	slices.Sort(charges)
	for i := range n {
		lo, hi := time.Duration(i)*w-wide, time.Duration(i+1)*w
		a, _ := slices.BinarySearch(charges, lo)
		b, _ := slices.BinarySearch(charges, hi)
		ws.Trace[i] = b - a
		if lim.Algorithm == FixedWindow {
			if c.leased() {
				lo = time.Duration(i) * w // a leased unit is spent in its own window
			}
			periods := int(lim.windowOf(hi-1) - lim.windowOf(max(lo, 0)) + 1)
			ws.Bound[i] = lim.Events * periods
		} else {
			d := w + wide
			ws.Bound[i] = lim.Burst + int((int64(lim.Events)*int64(d)+int64(lim.Period)-1)/int64(lim.Period))
		}
	}
	return ws
}

func (c Config) leased() bool { return c.Strategy == RegionalLeases || c.Strategy == GlobalLeases }

// Max is the largest count.
func (ws Windows) Max() int { return slices.Max(ws.Counts) }

// Mean is the mean count.
func (ws Windows) Mean() float64 {
	sum := 0
	for _, n := range ws.Counts {
		sum += n
	}
	return float64(sum) / float64(len(ws.Counts))
}

// OverLimit is how many windows admitted more than Limit.
func (ws Windows) OverLimit() int { return ws.over(func(int) int { return ws.Limit }) }

// OverBound is how many windows admitted more than their Bound.
func (ws Windows) OverBound() int { return ws.over(func(i int) int { return ws.Bound[i] }) }

// OverTrace is how many windows admitted more than their Trace bound.
func (ws Windows) OverTrace() int { return ws.over(func(i int) int { return ws.Trace[i] }) }

func (ws Windows) over(limit func(int) int) int {
	n := 0
	for i, c := range ws.Counts {
		if c > limit(i) {
			n++
		}
	}
	return n
}

// Latency is the p-th percentile (0 < p <= 100) of decision latency: how
// long a request waited for its decision.
func (r *Result) Latency(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// CallsPerDecision is the messages to a store or grantor per decision,
// all of them and those that crossed regions.
func (r *Result) CallsPerDecision() (all, cross float64) {
	if r.Requests == 0 {
		return 0, 0
	}
	return float64(r.Calls) / float64(r.Requests), float64(r.CrossCalls) / float64(r.Requests)
}
