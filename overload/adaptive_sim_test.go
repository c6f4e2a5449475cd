package overload

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// simServer is a tiny queueing model on a fake clock: a server with
// `workers` workers taking requests first come, first served from an
// unbounded queue, service times log-normal with mean svc, and open-loop
// Poisson arrivals, each asking the limiter first. Its true concurrency
// capacity is `workers`: fewer in flight leave workers idle, more wait.
type simServer struct {
	t       *testing.T
	rng     *rand.Rand
	clk     *coretest.Clock
	lim     *Adaptive
	workers []simJob // end 0: idle
	active  int      // workers that take new jobs (the capacity)
	queue   []simJob
	mix     []Priority // arrivals' priorities, drawn uniformly
	tenants []string   // arrivals' keys, drawn uniformly (none: Acquire)
	svc     time.Duration
	sigma   float64
	load    float64 // arrivals, as a multiple of the capacity
	next    int64   // the next arrival

	// Counts since the last reset.
	offered, admitted, good int
	limits                  []int
	lats                    []time.Duration // of the requests served
	byPrio                  map[Priority]*simCount
	byTenant                map[string]simCount
}

type simCount struct{ offered, admitted int }

func (c simCount) add(admitted bool) simCount {
	c.offered++
	if admitted {
		c.admitted++
	}
	return c
}

type simJob struct {
	tok          Token
	arrived, end int64
}

func newSim(t *testing.T, workers int, svc time.Duration, seed uint64) *simServer {
	clk := coretest.NewClock(time.Unix(1000, 0))
	lim, err := NewAdaptive(AdaptiveConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	s := &simServer{t: t, rng: rand.New(rand.NewPCG(seed, 1)), clk: clk, lim: lim,
		workers: make([]simJob, workers), active: workers, svc: svc, sigma: 0.5, load: 0.5,
		mix: []Priority{Normal}, byPrio: map[Priority]*simCount{}, byTenant: map[string]simCount{}}
	s.next = clk.Now()
	return s
}

func (s *simServer) service() int64 {
	f := math.Exp(s.sigma*s.rng.NormFloat64() - s.sigma*s.sigma/2)
	return max(1, int64(float64(s.svc)*f))
}

// capacity is the requests per second the server completes when busy.
func (s *simServer) capacity() float64 { return float64(s.active) / s.svc.Seconds() }

func (s *simServer) reset() {
	s.offered, s.admitted, s.good, s.limits, s.lats = 0, 0, 0, s.limits[:0], s.lats[:0]
	clear(s.byPrio)
	clear(s.byTenant)
}

// setWorkers changes the capacity live: workers beyond n finish their
// job and take no more.
func (s *simServer) setWorkers(n int) {
	for len(s.workers) < n {
		s.workers = append(s.workers, simJob{})
	}
	s.active = n
	for i := range n {
		if s.workers[i].end == 0 {
			s.startNext(i, s.clk.Now())
		}
	}
}

// run advances the model by d, recording the limit every millisecond.
func (s *simServer) run(d time.Duration) {
	until := s.clk.Now() + int64(d)
	nextRecord := s.clk.Now()
	for {
		now, w := s.next, -1
		for i := range s.workers {
			if e := s.workers[i].end; e != 0 && e < now {
				now, w = e, i
			}
		}
		if now > until {
			s.clk.Set(time.Unix(0, until))
			return
		}
		for ; nextRecord <= now; nextRecord += int64(time.Millisecond) {
			s.limits = append(s.limits, s.lim.Stats().Limit)
		}
		s.clk.Set(time.Unix(0, now))
		if w >= 0 {
			j := s.workers[w]
			j.tok.End(core.EndDone)
			lat := time.Duration(now - j.arrived)
			if lat <= 5*s.svc {
				s.good++
			}
			s.lats = append(s.lats, lat)
			s.workers[w] = simJob{}
			if w < s.active {
				s.startNext(w, now)
			}
			continue
		}
		s.offered++
		gap := s.rng.ExpFloat64() / (s.load * s.capacity()) * 1e9
		s.next = now + max(1, int64(gap))
		p := s.mix[s.rng.IntN(len(s.mix))]
		c := s.byPrio[p]
		if c == nil {
			c = &simCount{}
			s.byPrio[p] = c
		}
		c.offered++
		var tenant string
		var tok Token
		var ok bool
		if len(s.tenants) > 0 {
			tenant = s.tenants[s.rng.IntN(len(s.tenants))]
			var v verdict
			tok, v = s.lim.acquire(p, 1, s.lim.fair.slotOf(tenant))
			ok = v == admitted
			s.byTenant[tenant] = s.byTenant[tenant].add(ok)
		} else {
			tok, ok = s.lim.Acquire(p, 1)
		}
		if ok {
			s.admitted++
			c.admitted++
			s.queue = append(s.queue, simJob{tok: tok, arrived: now})
			for i := range s.active {
				if s.workers[i].end == 0 {
					s.startNext(i, now)
					break
				}
			}
		}
	}
}

func (s *simServer) startNext(w int, now int64) {
	if len(s.queue) == 0 {
		return
	}
	j := s.queue[0]
	s.queue = s.queue[1:]
	j.end = now + s.service()
	s.workers[w] = j
}

// check reports the limit's range and mean since the last reset, and
// the goodput as a share of the capacity over d.
func (s *simServer) stats(d time.Duration) (lo, hi int, mean, goodput float64) {
	lo, hi = math.MaxInt, 0
	sum := 0
	for _, l := range s.limits {
		lo, hi, sum = min(lo, l), max(hi, l), sum+l
	}
	return lo, hi, float64(sum) / float64(len(s.limits)), float64(s.good) / (s.capacity() * d.Seconds())
}

// simSeedFlag seeds the models' randomness: -simseed=N runs them with
// another, to check that what they show is no accident of one.
var simSeedFlag = flag.Uint64("simseed", 1, "seed of the adaptive limit's queueing models")

// TestAdaptiveSimConverges: a server of 40 workers at 5 ms (8,000
// requests a second) at half load, then at 2× and 5× its capacity. The
// limit settles near 40 (the capacity plus the tolerance) within half a
// second, stays there without drift, and the goodput (answers within 5×
// the mean service time) is at least 95 % of the capacity. (20 s at
// each load; 4 s under the race detector.)
func TestAdaptiveSimConverges(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	s.run(2 * time.Second) // the slow start, from 1
	s.reset()
	s.run(5 * time.Second)
	if s.offered == 0 || s.admitted != s.offered {
		t.Errorf("at half load %d of %d refused", s.offered-s.admitted, s.offered)
	}
	span := 20 * time.Second
	if coretest.Race {
		span = 4 * time.Second
	}
	for _, load := range []float64{2, 5} {
		s.load = load
		s.run(500 * time.Millisecond)
		s.reset()
		s.run(span)
		lo, hi, mean, goodput := s.stats(span)
		slo, shi := s.smoothed(1000)
		t.Logf("1 s means %.1f–%.1f", slo, shi)
		t.Logf("%v×: limit %d–%d (mean %.1f), goodput %.3f", load, lo, hi, mean, goodput)
		if slo < 36 || shi > 50 || mean < 40 || mean > 48 || goodput < 0.95 {
			t.Errorf("%v×: limit means over 1 s %.1f–%.1f, want within 36–50, overall %.1f, want 40–48; goodput %.3f, want >= 0.95", load, slo, shi, mean, goodput)
		}
	}
}

// p99 is the 99th percentile of the latencies served since the reset.
func (s *simServer) p99() time.Duration {
	l := slices.Clone(s.lats)
	slices.Sort(l)
	return l[len(l)*99/100]
}

// smoothed returns the least and greatest mean of the limit over runs of
// n records.
func (s *simServer) smoothed(n int) (lo, hi float64) {
	lo = math.Inf(1)
	for i := 0; i+n <= len(s.limits); i += n {
		sum := 0
		for _, l := range s.limits[i : i+n] {
			sum += l
		}
		m := float64(sum) / float64(n)
		lo, hi = min(lo, m), max(hi, m)
	}
	return lo, hi
}

// settle runs the model until the limit's mean over each 100 ms stays
// within [lo, hi] for a whole second, and returns how long that took
// (from the start of that second), or fails after limit.
func (s *simServer) settle(lo, hi float64, limit time.Duration) time.Duration {
	s.t.Helper()
	var inBand, elapsed time.Duration
	for elapsed < limit {
		s.reset()
		s.run(100 * time.Millisecond)
		elapsed += 100 * time.Millisecond
		_, _, mean, _ := s.stats(100 * time.Millisecond)
		if mean < lo || mean > hi {
			inBand = 0
			continue
		}
		if inBand += 100 * time.Millisecond; inBand >= time.Second {
			return elapsed - inBand
		}
	}
	s.t.Fatalf("the limit did not settle within [%v, %v] in %v", lo, hi, limit)
	return 0
}

// TestAdaptiveSimChanges: the limit follows changes of load and capacity
// (the model's workers at 5 ms, 40 of them):
//   - a step from half load to 3×: settled near 40 within half a second;
//   - half the workers gone: settled near 20 within 2 s;
//   - the service twice as slow (the same workers, so the same
//     concurrency): the baseline is rebased, settled near 40 again
//     within 2 s;
//   - the service back to 5 ms while overloaded: the baseline is stale
//     high, and probes bring it down, settled within 10 s (seeds 1–8:
//     3–9 s);
//   - the overload over: no refusals at half load.
func TestAdaptiveSimChanges(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	s.run(2 * time.Second)
	s.load = 3
	d := s.settle(34, 50, 2*time.Second)
	t.Logf("step to 3×: settled after %v", d)
	if d > 500*time.Millisecond {
		t.Errorf("after the step to 3×: settled after %v, want <= 500ms", d)
	}
	s.run(3 * time.Second)
	s.setWorkers(20)
	s.load = 6 // the same arrivals, against half the capacity
	d = s.settle(17, 25, 4*time.Second)
	t.Logf("half the workers: settled after %v", d)
	if d > 2*time.Second {
		t.Errorf("after half the workers left: settled after %v, want <= 2s", d)
	}
	s.setWorkers(40)
	s.run(3 * time.Second)
	s.svc = 10 * time.Millisecond
	d = s.settle(34, 50, 4*time.Second)
	t.Logf("service twice as slow: settled after %v", d)
	if d > 2*time.Second {
		t.Errorf("after the service slowed down: settled after %v, want <= 2s", d)
	}
	s.run(3 * time.Second)
	if b := s.lim.Stats().Baseline; b < 9*time.Millisecond || b > 11*time.Millisecond {
		t.Errorf("after the service slowed down: baseline %v, want 9–11ms", b)
	}
	s.svc = 5 * time.Millisecond
	d = s.settle(34, 50, 15*time.Second)
	t.Logf("service fast again: settled after %v", d)
	if d > 10*time.Second {
		t.Errorf("after the service sped up again: settled after %v, want <= 10s", d)
	}
	if b := s.lim.Stats().Baseline; b < 4500*time.Microsecond || b > 5500*time.Microsecond {
		t.Errorf("after the service sped up again: baseline %v, want 4.5–5.5ms", b)
	}
	s.load = 0.5
	s.run(time.Second)
	s.reset()
	s.run(5 * time.Second)
	if s.offered == 0 || s.admitted != s.offered {
		t.Errorf("after the overload: %d of %d refused at half load", s.offered-s.admitted, s.offered)
	}
}

// TestAdaptiveSimLatency: at 5× the capacity, the 99th percentile of the
// admitted requests' latency stays within 1.5× that of the unloaded
// service (log-normal, σ = 0.5: 2.8× the mean).
func TestAdaptiveSimLatency(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	s.load = 0.3
	s.run(3 * time.Second)
	s.reset()
	s.run(2 * time.Second)
	unloaded := s.p99()
	s.load = 5
	s.run(time.Second)
	s.reset()
	s.run(3 * time.Second)
	t.Logf("p99 unloaded %v, at 5× %v (%.2f×)", unloaded, s.p99(), float64(s.p99())/float64(unloaded))
	if s.p99() > unloaded*3/2 {
		t.Errorf("p99 at 5× %v, want <= 1.5 × %v", s.p99(), unloaded)
	}
}

// TestAdaptiveSimPriorities: at 3× the capacity with a fifth of the
// traffic Critical, a fifth Sheddable and the rest Normal, every
// critical request is served, the sheddable ones are shed first, and
// the goodput holds.
func TestAdaptiveSimPriorities(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	s.mix = []Priority{Critical, Normal, Normal, Normal, Sheddable}
	s.run(2 * time.Second)
	s.load = 3
	s.run(time.Second)
	s.reset()
	s.run(5 * time.Second)
	_, _, _, goodput := s.stats(5 * time.Second)
	share := func(p Priority) float64 {
		c := s.byPrio[p]
		return float64(c.admitted) / float64(c.offered)
	}
	t.Logf("admitted: critical %.4f, normal %.4f, sheddable %.4f; goodput %.3f",
		share(Critical), share(Normal), share(Sheddable), goodput)
	if share(Critical) < 0.999 || share(Sheddable) > share(Normal)/2 || goodput < 0.95 {
		t.Errorf("want critical >= 0.999, sheddable at most half normal's share, goodput >= 0.95")
	}
}

// TestAdaptiveSimBursts: at 0.8× the capacity, Poisson arrivals are all
// admitted. With bursts of 100 ms at 2× every 2 s on top, a burst's
// excess beyond the capacity is shed (queued, it would wait 100 ms, 20×
// the service time), and between the bursts at most 0.1 % is refused:
// the limit does not dip after a burst.
func TestAdaptiveSimBursts(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	s.load = 0.8
	s.run(3 * time.Second)
	s.reset()
	s.run(10 * time.Second)
	if s.offered == 0 || s.admitted != s.offered {
		t.Errorf("at 0.8×: %d of %d refused, want none", s.offered-s.admitted, s.offered)
	}
	var burst, between [2]int // offered, refused
	for range 5 {
		s.reset()
		s.load = 2
		s.run(100 * time.Millisecond)
		burst[0], burst[1] = burst[0]+s.offered, burst[1]+s.offered-s.admitted
		s.reset()
		s.load = 0.8
		s.run(1900 * time.Millisecond)
		between[0], between[1] = between[0]+s.offered, between[1]+s.offered-s.admitted
	}
	t.Logf("bursts: %d of %d refused; between them: %d of %d", burst[1], burst[0], between[1], between[0])
	if between[1]*1000 > between[0] {
		t.Errorf("between the bursts %d of %d refused, want <= 0.1 %%", between[1], between[0])
	}
}

// TestAdaptiveSimTenants: at 3× the capacity, one tenant sends nine
// tenths of the traffic and another one tenth (0.3× the capacity, less
// than its fair share, half): the small tenant is served whole, the
// large one gets the rest; first come, first served would have cut both
// to a third.
func TestAdaptiveSimTenants(t *testing.T) {
	t.Parallel()
	s := newSim(t, 40, 5*time.Millisecond, *simSeedFlag)
	small := "small"
	for i := 0; s.lim.fair.slotOf(small) == s.lim.fair.slotOf("big"); i++ {
		small = fmt.Sprint("small", i) // one slot holds both: take another key
	}
	s.tenants = []string{"big", "big", "big", "big", "big", "big", "big", "big", "big", small}
	s.run(2 * time.Second)
	s.load = 3
	s.run(time.Second)
	s.reset()
	s.run(5 * time.Second)
	_, _, _, goodput := s.stats(5 * time.Second)
	b, sm := s.byTenant["big"], s.byTenant[small]
	t.Logf("admitted: big %d of %d, small %d of %d (%.4f); goodput %.3f",
		b.admitted, b.offered, sm.admitted, sm.offered, float64(sm.admitted)/float64(sm.offered), goodput)
	if sm.admitted*1000 < sm.offered*995 || goodput < 0.95 {
		t.Errorf("want the small tenant >= 99.5 %% admitted, goodput >= 0.95")
	}
}
