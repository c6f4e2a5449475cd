package main

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// limit is the one policy every algorithm enforces: 20 requests a second,
// at most 10 at once (the window algorithms and the shaper ignore Burst).
var limit = core.Limit{Events: 20, Period: time.Second, Burst: 10, Name: "demo"}

// shaperMaxDelay is the longest wait the leaky bucket admits a request with.
const shaperMaxDelay = 500 * time.Millisecond

// start is where every run's fake clock starts: a whole second, so that
// the fixed and sliding windows' boundaries fall on the traffic's whole
// seconds.
var start = time.Unix(1_700_000_000, 0)

// policy is one algorithm with its settings.
type policy struct {
	name string // also the chart's file name
	// set turns the shared limit into this algorithm's policy.
	set func(core.Limit) core.Limit
	// bound, if the algorithm promises one, is the most cost it ever
	// admits in any period-long window, for traffic whose largest request
	// costs maxCost. The test checks it on every run.
	bound func(l core.Limit, maxCost int) int
	// own, when set, replaces the shared limit: a concurrency limit counts
	// requests in flight, not per period.
	own core.Limit
}

// limit returns the limit p runs under.
func (p policy) limit() core.Limit {
	if p.own.Events != 0 {
		return p.own
	}
	return p.set(limit)
}

// policies is every algorithm the program compares, in chart order.
// Adding an algorithm is one entry here: its runs, its chart, its rows in
// the summary, its line in the comparison chart and, with a bound, the
// test's check of that bound all follow from it.
var policies = []policy{
	{name: "token-bucket", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.TokenBucket) },
		// A full bucket, plus what refills during the period.
		bound: func(l core.Limit, _ int) int { return l.EffectiveBurst() + l.Events }},
	{name: "token-bucket-overdraft", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.TokenBucket).WithOverdraft() },
		// As the plain bucket, plus the one request that may go into debt.
		bound: func(l core.Limit, maxCost int) int { return l.EffectiveBurst() + l.Events + maxCost }},
	{name: "gcra", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.GCRA) },
		bound: func(l core.Limit, _ int) int { return l.EffectiveBurst() + l.Events }},
	{name: "fixed-window", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.FixedWindow) },
		// A sliding period overlaps two windows, each admitting Events.
		bound: func(l core.Limit, _ int) int { return 2 * l.Events }},
	// The sliding-window counter assumes the previous window's requests
	// were spread evenly, so it promises no exact bound.
	{name: "sliding-window", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.SlidingWindow) }},
	{name: "leaky-bucket", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.LeakyBucket).WithMaxDelay(shaperMaxDelay) },
		// Requests proceed one interval per unit of cost apart: all but the
		// last one in the period take less than the period.
		bound: func(l core.Limit, maxCost int) int { return l.Events - 1 + maxCost }},
	{name: "warm-up", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.WarmUp).WithWarmUp(2*time.Second, 3) },
		// Each admission moves the next free instant at least one stable
		// interval per unit of cost on.
		bound: func(l core.Limit, maxCost int) int { return l.Events - 1 + maxCost }},
	{name: "sliding-log", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.SlidingLog) },
		// The exact window: never more than Events in any period.
		bound: func(l core.Limit, _ int) int { return l.Events }},
	// Ten sub-windows of 100 ms: Events plus at most one sub-window's
	// admissions, which promises nothing tighter than two periods' worth.
	{name: "sub-windows-10", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.SlidingWindow).WithSubWindows(10) },
		bound: func(l core.Limit, _ int) int { return 2 * l.Events }},
	// At most 6 units in flight, each running 20–120 ms: a cap on
	// concurrency, not on rate.
	{name: "concurrency", set: func(l core.Limit) core.Limit { return l.WithAlgorithm(core.Concurrency) }, own: core.InFlight(6).WithName("in-flight")},
}

// request is one request of synthetic traffic.
type request struct {
	at   time.Duration // when it arrives, since the traffic started
	cost int
	// hold is how long it runs once it proceeds: a Lease (concurrency
	// limits) is released then.
	hold time.Duration
}

// shape is a kind of traffic, generated from a seed so that every run of
// the program (and every algorithm) sees the same requests.
type shape struct {
	name   string
	about  string
	length time.Duration
	gen    func(r *rand.Rand) []request
}

// Rates used by the shapes, relative to limit (20/s).
const (
	below = 15 // requests a second, under the limit
	above = 30 // requests a second, over it
)

// shapes is the traffic every policy is driven with.
var shapes = []shape{
	{name: "steady-below", about: "15/s", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request { return steady(r, 0, 5*time.Second, below) }},
	{name: "steady-above", about: "30/s", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request { return steady(r, 0, 5*time.Second, above) }},
	{name: "bursty", about: "bursts of 12-28 within 150 ms, each second", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request {
			var rs []request
			for s := 0; s < 5; s++ {
				rs = append(rs, burst(r, time.Duration(s)*time.Second+200*time.Millisecond, 150*time.Millisecond, 12+r.IntN(17))...)
			}
			return rs
		}},
	{name: "boundary", about: "25 in the 100 ms before and 25 after 1 s and 3 s", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request {
			var rs []request
			for _, edge := range []time.Duration{time.Second, 3 * time.Second} {
				rs = append(rs, burst(r, edge-100*time.Millisecond, 100*time.Millisecond, 25)...)
				rs = append(rs, burst(r, edge, 100*time.Millisecond, 25)...)
			}
			return rs
		}},
	{name: "cold-start", about: "idle for 1 s, then 30/s", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request { return steady(r, time.Second, 5*time.Second, above) }},
	{name: "mixed-cost", about: "12/s of cost 1, and one of cost 6 every 500 ms", length: 5 * time.Second,
		gen: func(r *rand.Rand) []request {
			rs := steady(r, 0, 5*time.Second, 12)
			for at := 250 * time.Millisecond; at < 5*time.Second; at += 500 * time.Millisecond {
				rs = append(rs, request{at: at, cost: 6, hold: holdTime(r)})
			}
			return rs
		}},
}

// steady arrives perSecond times a second from `from` to `to`, cost 1, each
// arrival jittered by up to a quarter of the interval either way.
func steady(r *rand.Rand, from, to time.Duration, perSecond int) []request {
	interval := time.Second / time.Duration(perSecond)
	var rs []request
	for at := from + interval/2; at < to; at += interval {
		jitter := time.Duration(r.Int64N(int64(interval/2))) - interval/4
		rs = append(rs, request{at: at + jitter, cost: 1, hold: holdTime(r)})
	}
	return rs
}

// burst arrives n times at random within [from, from+within).
func burst(r *rand.Rand, from, within time.Duration, n int) []request {
	rs := make([]request, n)
	for i := range rs {
		rs[i] = request{at: from + time.Duration(r.Int64N(int64(within))), cost: 1, hold: holdTime(r)}
	}
	return rs
}

// holdTime is a request's service time: 20 to 120 ms.
func holdTime(r *rand.Rand) time.Duration {
	return 20*time.Millisecond + time.Duration(r.Int64N(int64(100*time.Millisecond)))
}

// traffic returns the shape's requests in arrival order, the same on every
// call.
func (s *shape) traffic(seed uint64) []request {
	h := fnv.New64a()
	h.Write([]byte(s.name))
	rs := s.gen(rand.New(rand.NewPCG(seed, h.Sum64())))
	slices.SortStableFunc(rs, func(a, b request) int { return cmp.Compare(a.at, b.at) })
	return rs
}

// outcome is what one request got.
type outcome struct {
	request
	allowed bool
	delay   time.Duration // how long it waits before it proceeds (shapers)
}

// result is one policy driven with one shape.
type result struct {
	policy   *policy
	shape    *shape
	outcomes []outcome
}

// simulate drives every policy with every shape, each run on a fresh
// limiter and a fresh fake clock: no real time passes.
func simulate(seed uint64) ([]result, error) {
	var results []result
	for i := range policies {
		for j := range shapes {
			out, err := drive(&policies[i], shapes[j].traffic(seed))
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", policies[i].name, shapes[j].name, err)
			}
			results = append(results, result{policy: &policies[i], shape: &shapes[j], outcomes: out})
		}
	}
	return results, nil
}

// drive sends the requests, one key, in order, moving the clock to each
// arrival. Leases (concurrency limits) are released when their request
// ends, the clock first moved to that instant.
func drive(p *policy, reqs []request) ([]outcome, error) {
	ctx := context.Background()
	clock := coretest.NewClock(start)
	lim, err := core.New(p.limit(), core.WithClock(clock))
	if err != nil {
		return nil, err
	}
	var running leases
	release := func(until time.Duration) error {
		for len(running) > 0 && running[0].end <= until {
			l := heap.Pop(&running).(lease)
			clock.Set(start.Add(l.end))
			if err := l.lease.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	out := make([]outcome, len(reqs))
	for i, r := range reqs {
		if err := release(r.at); err != nil {
			return nil, err
		}
		clock.Set(start.Add(r.at))
		d, err := lim.Allow(ctx, "client", r.cost)
		if err != nil {
			return nil, err
		}
		out[i] = outcome{request: r, allowed: d.Allowed, delay: d.Delay}
		if !d.Lease.IsZero() {
			heap.Push(&running, lease{end: r.at + d.Delay + r.hold, lease: d.Lease})
		}
	}
	return out, nil
}

// lease is a slot held until end.
type lease struct {
	end   time.Duration
	lease core.Lease
}

// leases is a min-heap of leases by end.
type leases []lease

func (h leases) Len() int           { return len(h) }
func (h leases) Less(i, j int) bool { return h[i].end < h[j].end }
func (h leases) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *leases) Push(x any)        { *h = append(*h, x.(lease)) }
func (h *leases) Pop() any {
	old := *h
	l := old[len(old)-1]
	*h = old[:len(old)-1]
	return l
}
