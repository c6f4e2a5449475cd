package overloadsim

import (
	"math"
	"time"

	"github.com/floodgate/floodgate/overload"
)

// The scenarios of issue 33. Each takes a base Config for the server
// (Seed, Workers, MeanService, Sigma, SLOFactor; its Duration, Load,
// Resizes, Classes and Tenants are the scenario's) and starts with a
// warm-up below capacity, so that every controller has learnt the idle
// server first, as it would have in production.

// Warmup is the warm-up every scenario starts with, at half capacity.
const Warmup = 10 * time.Second

// scenarioQueue bounds the server's queue in the scenarios, unless the
// base Config does: half a million requests, a minute's wait at the
// default capacity, far past any deadline, so that it changes no figure
// and only bounds the memory of a controller that lets the queue grow.
const scenarioQueue = 1 << 19

func scenario(base Config, d time.Duration, load ...Step) Config {
	c := base
	c.Duration, c.Load, c.Resizes, c.Classes, c.Tenants = d, load, nil, nil, nil
	if c.MaxQueue == 0 {
		c.MaxQueue = scenarioQueue
	}
	return c
}

// Steady is a steady overload's figures, measured over its last 10 s.
type Steady struct {
	// Goodput is the requests answered within the SLO, as a share of
	// capacity (goal: GoodputGoal).
	Goodput float64
	// P99 is the p99 latency of admitted requests over the unloaded p99
	// (goal at 5×: P99Goal).
	P99 float64
}

// Overload runs the warm-up, then load × capacity for 20 s.
func Overload(base Config, f Factory, load float64) (Steady, error) {
	r, err := Run(scenario(base, Warmup+20*time.Second, Step{0, 0.5}, Step{Warmup, load}), f)
	if err != nil {
		return Steady{}, err
	}
	from, to := Warmup+10*time.Second, Warmup+20*time.Second
	return Steady{
		Goodput: r.Goodput(from, to),
		P99:     float64(r.P99(from, to)) / float64(r.Config.UnloadedP99()),
	}, nil
}

// ColdLoads are the loads Cold measures, in multiples of capacity.
var ColdLoads = [2]float64{2, 5}

// Cold runs load × capacity from the start, with no warm-up, for 12 s,
// and measures from 2 s on: a server started into its traffic, whose
// limiter must learn the idle server's latency under overload (on a
// server of shared cores, a limit above the cores measures a latency
// already stretched by the sharing).
func Cold(base Config, f Factory, load float64) (Steady, error) {
	r, err := Run(scenario(base, 12*time.Second, Step{0, load}), f)
	if err != nil {
		return Steady{}, err
	}
	from, to := 2*time.Second, 12*time.Second
	return Steady{
		Goodput: r.Goodput(from, to),
		P99:     float64(r.P99(from, to)) / float64(r.Config.UnloadedP99()),
	}, nil
}

// Convergence is how long after an event a run met the goals for good;
// OK is false when it never did before the run ended.
type Convergence struct {
	After time.Duration
	OK    bool
}

// StepUp runs 0.8 × capacity for 10 s, then 3 × for 10 s: the time after
// the step until goodput and p99 meet the goals (Result.Converged; goal
// 500 ms).
func StepUp(base Config, f Factory) (Convergence, error) {
	r, err := Run(scenario(base, 20*time.Second, Step{0, 0.8}, Step{10 * time.Second, 3}), f)
	if err != nil {
		return Convergence{}, err
	}
	after, ok := r.Converged(10*time.Second, 20*time.Second)
	return Convergence{after, ok}, nil
}

// Halve runs the warm-up, then 2 × the starting capacity, and halves the
// workers 10 s later: the time after the halving until the goals are met
// against the halved capacity (goal 2 s).
func Halve(base Config, f Factory) (Convergence, error) {
	c := scenario(base, Warmup+20*time.Second, Step{0, 0.5}, Step{Warmup, 2})
	c = c.withDefaults()
	c.Resizes = []Resize{{At: Warmup + 10*time.Second, Workers: max(1, c.Workers/2)}}
	r, err := Run(c, f)
	if err != nil {
		return Convergence{}, err
	}
	after, ok := r.Converged(Warmup+10*time.Second, Warmup+20*time.Second)
	return Convergence{after, ok}, nil
}

// Recover runs 0.8 × capacity for 10 s, 3 × for 10 s and 0.8 × for
// 10 s: the time after the overload ends until the limit is back to 90 %
// of its mean over the last second before it, for good (goal 5 s). A
// controller with no limit is back at once.
func Recover(base Config, f Factory) (Convergence, error) {
	r, err := Run(scenario(base, 30*time.Second, Step{0, 0.8}, Step{10 * time.Second, 3}, Step{20 * time.Second, 0.8}), f)
	if err != nil {
		return Convergence{}, err
	}
	before := r.Limits(9*time.Second, 10*time.Second)
	ref := 0.0
	for _, l := range before {
		ref += l / float64(len(before))
	}
	if math.IsInf(ref, 1) {
		return Convergence{0, true}, nil
	}
	// Bin i's limit is sampled at its end; the first sample at or after
	// the end of the overload is that of the bin ending there.
	bin := r.Config.Bin
	first := int(20*time.Second/bin) - 1
	back := -1
	for i := len(r.Bins) - 1; i >= first; i-- {
		if r.Bins[i].Limit < 0.9*ref {
			break
		}
		back = i
	}
	if back < 0 {
		return Convergence{}, nil
	}
	return Convergence{r.Bins[back].Start + bin - 20*time.Second, true}, nil
}

// DriftFigures are the limit's, over the second half of a long overload,
// as ratios to the workers (the true concurrency capacity).
type DriftFigures struct {
	// Within is the share of the limit's samples within ±15 % of it.
	Within         float64
	Mean, Min, Max float64
}

// Drift runs the warm-up, then 2 × capacity for d (the is 10
// minutes), and samples the limit every bin over the second half.
func Drift(base Config, f Factory, d time.Duration) (DriftFigures, error) {
	r, err := Run(scenario(base, Warmup+d, Step{0, 0.5}, Step{Warmup, 2}), f)
	if err != nil {
		return DriftFigures{}, err
	}
	ls := r.Limits(Warmup+d/2, Warmup+d)
	fig := DriftFigures{Min: math.Inf(1), Max: math.Inf(-1)}
	n := float64(r.Config.Workers)
	for _, l := range ls {
		x := l / n
		if math.Abs(x-1) <= 0.15 {
			fig.Within++
		}
		fig.Mean += x
		fig.Min, fig.Max = math.Min(fig.Min, x), math.Max(fig.Max, x)
	}
	fig.Within /= float64(len(ls))
	fig.Mean /= float64(len(ls))
	return fig, nil
}

// BurstFigures split a bursty run into its calm stretches and its bursts.
type BurstFigures struct {
	// RefusedCalm is the share of requests shed outside the bursts
	// (goal 0.1 %), RefusedBurst inside them.
	RefusedCalm, RefusedBurst float64
	// ServedCalm is the share of requests outside the bursts answered
	// within the SLO.
	ServedCalm float64
}

// Bursts runs 0.8 × capacity for 125 s, with 1 s bursts at 3 × every
// 10 s from 15 s on, and counts from 5 s to 124 s: long enough for a
// periodic probe (Envoy's minRTT, every 60 to 69 s) to fall in it. A
// burst at 3 × is more than the server can answer, so the goal of 0.1 %
// refused is judged outside the bursts; the seconds after each, while
// the queue it left drains, count as calm.
func Bursts(base Config, f Factory) (BurstFigures, error) {
	steps := []Step{{0, 0.8}}
	for t := 15 * time.Second; t < 120*time.Second; t += 10 * time.Second {
		steps = append(steps, Step{t, 3}, Step{t + time.Second, 0.8})
	}
	r, err := Run(scenario(base, 125*time.Second, steps...), f)
	if err != nil {
		return BurstFigures{}, err
	}
	var calm, burst struct{ arrived, shed, good int }
	for _, b := range r.span(5*time.Second, 124*time.Second) {
		k := &calm
		if s := b.Start % (10 * time.Second); b.Start >= 15*time.Second && s >= 5*time.Second && s < 6*time.Second {
			k = &burst
		}
		k.arrived += b.Arrived
		k.shed += b.Shed
		for _, c := range b.Classes {
			k.good += c.Good
		}
	}
	return BurstFigures{
		RefusedCalm:  ratio(calm.shed, calm.arrived),
		RefusedBurst: ratio(burst.shed, burst.arrived),
		ServedCalm:   ratio(calm.good, calm.arrived),
	}, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// PriorityFigures are a prioritised overload's.
type PriorityFigures struct {
	// Critical is the share of critical requests answered within the
	// SLO (goal 99.9 %).
	Critical float64
	// Inversions is Result.Inversions (goal 0.1 %).
	Inversions float64
	// Jain is Result.Jain, the least fair class's (goal 0.95).
	Jain float64
}

// Priorities runs the warm-up, then 3 × capacity for 22 s, 20 % of it
// Critical and 80 % Normal, from 8 tenants, one of which sends half of
// each class; it measures the requests that arrived over [20 s, 30 s).
func Priorities(base Config, f Factory) (PriorityFigures, error) {
	c := scenario(base, Warmup+22*time.Second, Step{0, 0.5}, Step{Warmup, 3})
	c.Classes = []Class{{overload.Critical, 0.2}, {overload.Normal, 0.8}}
	c.Tenants = []float64{7, 1, 1, 1, 1, 1, 1, 1}
	r, err := Run(c, f)
	if err != nil {
		return PriorityFigures{}, err
	}
	from, to := Warmup+10*time.Second, Warmup+20*time.Second
	return PriorityFigures{
		Critical:   r.Served(from, to, 0),
		Inversions: r.Inversions(from, to),
		Jain:       r.Jain(from, to),
	}, nil
}
