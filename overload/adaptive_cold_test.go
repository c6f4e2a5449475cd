package overload

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

// coldSeedsFlag is how many seeds TestAdaptiveSimColdStart runs each
// server on (-coldseeds=16 for the figures in
// benchmarks/results/2026-11-28-overload-cold-start.txt; 0: 12, or 3
// under the race detector).
var coldSeedsFlag = flag.Uint64("coldseeds", 0, "seeds of each server TestAdaptiveSimColdStart runs (0: 12, 3 under -race)")

// coldServers are the servers TestAdaptiveSimColdStart starts a fresh
// Adaptive into, at a multiple of their capacity, with the least goodput
// (answers within 5× the mean service time, as a share of the
// capacity) it wants over the first second and the first 3 s, and the
// most latencies of the service the limit may take to first reach the
// capacity (the workers). A slow service measures few requests a
// second at the floor: its first second cannot be as good (4 workers
// at 100 ms served 30-50 % of it before, stuck at 2, 30-68 % now).
var coldServers = []struct {
	workers    int
	svc        time.Duration
	load       float64
	first, in3 float64
	reach      float64
}{
	{16, 20 * time.Millisecond, 2, 0.65, 0.85, 20},
	{16, 20 * time.Millisecond, 5, 0.65, 0.85, 20},
	{50, 5 * time.Millisecond, 2, 0.85, 0.93, 30},
	{4, 100 * time.Millisecond, 2, 0.25, 0.6, 15},
	{200, 10 * time.Millisecond, 2, 0.7, 0.88, 30},
}

// TestAdaptiveSimColdStart: a fresh Adaptive started straight into an
// overload, at its floor, finds the capacity within a few dozen
// latencies of the service, however small or slow the service: the
// warm-up and the slow start measure windows of two latencies (twice
// the limit, at least slowSamples), and the slow start doubles the limit
// until two windows in a row are clearly past the band (see close).
// Twelve seeds of each server (-coldseeds); each line of the log is one
// run, with the limit every 250 ms.
func TestAdaptiveSimColdStart(t *testing.T) {
	t.Parallel()
	seeds := *coldSeedsFlag
	if seeds == 0 {
		seeds = 12
		if coretest.Race {
			seeds = 3
		}
	}
	for _, c := range coldServers {
		for seed := uint64(1); seed <= seeds; seed++ {
			s := newSim(t, c.workers, c.svc, seed)
			s.load = c.load
			reach := -1.0
			var lims string
			var good [12]int
			for i := range good {
				for range 250 {
					s.run(time.Millisecond)
					if reach < 0 && s.lim.Stats().Limit >= c.workers {
						reach = float64(s.clk.Now()-1000e9) / float64(c.svc)
					}
				}
				good[i] = s.good
				lims += fmt.Sprint(" ", s.lim.Stats().Limit)
			}
			first := float64(good[3]) / s.capacity()
			in3 := float64(good[11]) / (3 * s.capacity())
			name := fmt.Sprintf("%d×%v at %gx, seed %d", c.workers, c.svc, c.load, seed)
			t.Logf("%s: goodput %.0f%% in the first second, %.0f%% in 3 s; capacity reached after %.0f latencies; limit every 250 ms:%s",
				name, 100*first, 100*in3, reach, lims)
			if first < c.first || in3 < c.in3 || reach < 0 || reach > c.reach {
				t.Errorf("%s: goodput %.2f in the first second, %.2f in 3 s, capacity reached after %.1f latencies (-1: never); want >= %.2f, >= %.2f, <= %v",
					name, first, in3, reach, c.first, c.in3, c.reach)
			}
		}
	}
}
