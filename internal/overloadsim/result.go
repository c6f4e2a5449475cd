package overloadsim

import (
	"math"
	"slices"
	"time"
)

// The goals, which the scenarios judge against.
const (
	// GoodputGoal: goodput, as a share of capacity, under overload.
	GoodputGoal = 0.95
	// P99Goal: p99 latency of admitted requests, as a multiple of the
	// unloaded p99.
	P99Goal = 1.5
)

// Result is what a run counted, bin by bin.
type Result struct {
	Config Config // with its defaults filled in
	Bins   []Bin
}

// Bin counts one interval of Config.Bin. Arrivals, admissions and sheds
// count in the bin a request arrived in; completions and their latencies
// in the bin it ended in.
type Bin struct {
	Start                     time.Duration
	Arrived, Admitted, Shed   int
	Completed, Good, Overflow int
	// Capacity is how many requests the workers could answer in the bin
	// (available worker time / MeanService).
	Capacity float64
	// Limit is the controller's limit at the end of the bin.
	Limit float64
	// Classes count by Config.Classes; their Good counts requests that
	// arrived in the bin and were answered within the SLO.
	Classes []ClassBin
	lat     []int64 // latencies of the completions, ns
}

// ClassBin counts one priority class's requests that arrived in a bin.
type ClassBin struct {
	Arrived, Admitted, Shed, Good int
	// TenantArrived and TenantGood count by Config.Tenants.
	TenantArrived, TenantGood []int
}

func newResult(cfg Config) *Result {
	n := int((cfg.Duration + cfg.Bin - 1) / cfg.Bin)
	r := &Result{Config: cfg, Bins: make([]Bin, n)}
	for i := range r.Bins {
		b := &r.Bins[i]
		b.Start = time.Duration(i) * cfg.Bin
		b.Classes = make([]ClassBin, len(cfg.Classes))
		for k := range b.Classes {
			b.Classes[k].TenantArrived = make([]int, len(cfg.Tenants))
			b.Classes[k].TenantGood = make([]int, len(cfg.Tenants))
		}
	}
	return r
}

// span returns the bins [from, to) covers whole.
func (r *Result) span(from, to time.Duration) []Bin {
	i := int((from + r.Config.Bin - 1) / r.Config.Bin)
	k := min(int(to/r.Config.Bin), len(r.Bins))
	if i >= k {
		return nil
	}
	return r.Bins[i:k]
}

// Goodput returns the requests answered within the SLO in [from, to), as
// a share of what the server could answer then.
func (r *Result) Goodput(from, to time.Duration) float64 {
	return goodput(r.span(from, to))
}

func goodput(bins []Bin) float64 {
	good, capacity := 0, 0.0
	for _, b := range bins {
		good += b.Good
		capacity += b.Capacity
	}
	if capacity == 0 {
		return 0
	}
	return float64(good) / capacity
}

// P99 returns the p99 latency of the requests that completed in
// [from, to) (nearest rank), or the largest Duration when none did.
func (r *Result) P99(from, to time.Duration) time.Duration {
	return p99(r.span(from, to))
}

func p99(bins []Bin) time.Duration {
	var all []int64
	for _, b := range bins {
		all = append(all, b.lat...)
	}
	if len(all) == 0 {
		return time.Duration(math.MaxInt64)
	}
	slices.Sort(all)
	return time.Duration(all[int(math.Ceil(0.99*float64(len(all))))-1])
}

// Refused returns the share of the requests that arrived in [from, to)
// that the controller shed.
func (r *Result) Refused(from, to time.Duration) float64 {
	arrived, shed := 0, 0
	for _, b := range r.span(from, to) {
		arrived += b.Arrived
		shed += b.Shed
	}
	if arrived == 0 {
		return 0
	}
	return float64(shed) / float64(arrived)
}

// holds reports whether bins meet the goals: goodput of GoodputGoal and
// p99 within P99Goal × the unloaded p99.
func (r *Result) holds(bins []Bin) bool {
	return goodput(bins) >= GoodputGoal &&
		float64(p99(bins)) <= P99Goal*float64(r.Config.UnloadedP99())
}

// ConvergeWindow is the span over which Converged judges the goals: long
// enough that a healthy server's goodput does not dip under the goal by
// chance, short enough to time a convergence.
const ConvergeWindow = 500 * time.Millisecond

// Converged returns how long after event the run met the goals for good:
// the first bin from which every ConvergeWindow that starts there or later
// and ends by end holds. ok is false if none does.
func (r *Result) Converged(event, end time.Duration) (after time.Duration, ok bool) {
	bins := r.span(event, end)
	w := int(ConvergeWindow / r.Config.Bin)
	if w < 1 || len(bins) < w {
		return 0, false
	}
	first := -1
	for k := len(bins) - w; k >= 0; k-- {
		if !r.holds(bins[k : k+w]) {
			break
		}
		first = k
	}
	if first < 0 {
		return 0, false
	}
	return bins[first].Start - event, true
}

// Limits returns the limits sampled at the ends of the bins in [from, to).
func (r *Result) Limits(from, to time.Duration) []float64 {
	var ls []float64
	for _, b := range r.span(from, to) {
		ls = append(ls, b.Limit)
	}
	return ls
}
