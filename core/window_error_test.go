package core_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// windowShape is a synthetic traffic shape: the instants (ns after the
// start, non-decreasing) of cost-1 requests on one key.
type windowShape struct {
	name     string
	arrivals []int64
}

// windowShapes are the traffic shapes TestSubWindowError replays, over 30
// periods of a minute under 100 per minute. Every shape is deterministic.
func windowShapes() []windowShape {
	const p = int64(time.Minute)
	const span = 30 * p
	var shapes []windowShape
	// Steady: one request every 293ms, about twice the limit, out of step
	// with every sub-window.
	var steady []int64
	for t := int64(0); t < span; t += 293 * int64(time.Millisecond) {
		steady = append(steady, t)
	}
	shapes = append(shapes, windowShape{"steady 2x", steady})
	// Random: Poisson arrivals at 1.2 times the limit.
	r := rand.New(rand.NewPCG(1, 2))
	var poisson []int64
	for t := int64(0); t < span; t += int64(r.ExpFloat64() * float64(p) / 120) {
		poisson = append(poisson, t)
	}
	shapes = append(shapes, windowShape{"poisson 1.2x", poisson})
	// Bursty: bursts of 20 to 150 requests within 100ms, at random
	// instants 5 to 40 seconds apart.
	var bursty []int64
	for t := int64(0); t < span; t += int64(5000+r.IntN(35_001)) * int64(time.Millisecond) {
		n := 20 + r.IntN(131)
		for i := 0; i < n; i++ {
			bursty = append(bursty, t+int64(i)*int64(100*time.Millisecond)/int64(n))
		}
	}
	shapes = append(shapes, windowShape{"bursty", bursty})
	// Boundary-straddling: 100 requests in the last second before a
	// minute boundary and 100 in the first second after it, every other
	// minute (the fixed window's worst case).
	var straddle []int64
	for m := int64(1); m < 30; m += 2 {
		for i := int64(0); i < 200; i++ {
			straddle = append(straddle, m*p-int64(time.Second)+i*int64(10*time.Millisecond))
		}
	}
	shapes = append(shapes, windowShape{"boundary", straddle})
	// Ramps: the rate climbs from 0.5 to 3 times the limit over five
	// minutes, then falls back, over and over.
	var ramp []int64
	for t := int64(0); t < span; {
		phase := float64(t%(10*p)) / float64(5*p) // 0..2
		if phase > 1 {
			phase = 2 - phase
		}
		rate := 100 * (0.5 + 2.5*phase) // per minute
		t += int64(float64(p) / rate)
		ramp = append(ramp, t)
	}
	shapes = append(shapes, windowShape{"ramp 0.5-3x", ramp})
	return shapes
}

// windowRun is one limiter's decisions on a shape.
type windowRun struct {
	name      string
	sub       int
	admitted  []bool
	total     int
	peak      int // the most admitted in any (t−Period, t]
	maxBucket int // the most admitted in one sub-window (sub > 0)
}

// TestSubWindowError measures how far the window estimates stray from the
// exact log on the same traffic: each shape's requests are replayed on a
// fake clock through SlidingLog, SlidingWindow (the two-window weighted
// estimate) and SlidingWindow with 2, 4, 10 and 60 sub-windows, under
// 100 per minute. For each it reports how many more requests it admitted
// than the log, relative to the log's count (net), the share of all
// requests it decided otherwise than the log (differ: a decision shifted in
// time counts twice, once each way), and the most it admitted in any
// sliding minute, in multiples of the limit (peak; the log's is at most 1
// by definition).
//
// It checks what the definitions guarantee: the log never admits more than
// 100 in any sliding minute; n sub-windows never more than 100 plus what
// they admitted in one sub-window (the part of the oldest sub-window the
// count no longer covers); the two-window estimate never more than 200.
// And it checks the numbers the documentation quotes (see WithSubWindows),
// to the percent.
func TestSubWindowError(t *testing.T) {
	t.Parallel()
	const events = 100
	l := core.Limit{Events: events, Period: time.Minute}
	p := int64(l.Period)
	start := t0 // on a minute boundary, where the boundary shape straddles
	type result struct{ net, differ, peak float64 }
	got := map[string]map[string]result{}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-14s %-16s %8s %8s %8s\n", "shape", "algorithm", "net", "differ", "peak")
	for _, shape := range windowShapes() {
		var runs []*windowRun
		for _, sub := range []int{-1, 0, 2, 4, 10, 60} {
			l := l.WithAlgorithm(core.SlidingWindow)
			name := "sliding-window"
			switch {
			case sub < 0:
				l, name = l.WithAlgorithm(core.SlidingLog), "sliding-log"
			case sub > 0:
				l, name = l.WithSubWindows(sub), fmt.Sprintf("sub-windows=%d", sub)
			}
			clk := coretest.NewClock(start)
			lim, err := core.New(l, core.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			run := &windowRun{name: name, sub: sub, admitted: make([]bool, len(shape.arrivals))}
			buckets := map[int64]int{}
			var window []int64 // admitted instants in the last period
			for i, at := range shape.arrivals {
				clk.Set(start.Add(time.Duration(at)))
				d := allow(t, lim, "k", 1)
				if !d.Allowed {
					continue
				}
				run.admitted[i] = true
				run.total++
				now := clk.Now()
				for len(window) > 0 && window[0] <= now-p {
					window = window[1:]
				}
				window = append(window, now)
				run.peak = max(run.peak, len(window))
				if sub > 0 {
					b := now / (p / int64(sub))
					buckets[b]++
					run.maxBucket = max(run.maxBucket, buckets[b])
				}
			}
			runs = append(runs, run)
		}
		log := runs[0]
		got[shape.name] = map[string]result{}
		for _, run := range runs {
			differ := 0
			for i := range run.admitted {
				if run.admitted[i] != log.admitted[i] {
					differ++
				}
			}
			res := result{
				net:    100 * float64(run.total-log.total) / float64(log.total),
				differ: 100 * float64(differ) / float64(len(run.admitted)),
				peak:   float64(run.peak) / events,
			}
			got[shape.name][run.name] = res
			fmt.Fprintf(&report, "%-14s %-16s %+7.1f%% %7.1f%% %7.2fx\n", shape.name, run.name, res.net, res.differ, res.peak)
			switch {
			case run.sub < 0:
				if run.peak > events {
					t.Errorf("%s: the log admitted %d in one sliding period, more than %d", shape.name, run.peak, events)
				}
			case run.sub == 0:
				if run.peak > 2*events {
					t.Errorf("%s: the two-window estimate admitted %d in one sliding period, more than %d", shape.name, run.peak, 2*events)
				}
			default:
				if run.peak > events+run.maxBucket {
					t.Errorf("%s, %d sub-windows: admitted %d in one sliding period, more than %d + the %d of one sub-window", shape.name, run.sub, run.peak, events, run.maxBucket)
				}
			}
		}
	}
	t.Log(report.String())
	// The numbers WithSubWindows quotes, checked to within one point.
	quoted := []struct {
		shape, alg        string
		net, differ, peak float64
	}{
		// shape, algorithm, net %, differ %, peak
		{"steady 2x", "sliding-window", 0.1, 48.8, 1.32},
		{"steady 2x", "sub-windows=2", 1.2, 33.6, 1.35},
		{"steady 2x", "sub-windows=4", 0.6, 19.1, 1.17},
		{"steady 2x", "sub-windows=10", 0.2, 9.3, 1.07},
		{"steady 2x", "sub-windows=60", 0.0, 2.5, 1.01},
		{"poisson 1.2x", "sliding-window", 1.4, 22.1, 1.28},
		{"poisson 1.2x", "sub-windows=2", 3.5, 29.5, 1.26},
		{"poisson 1.2x", "sub-windows=4", 2.8, 24.1, 1.13},
		{"poisson 1.2x", "sub-windows=10", 1.9, 21.6, 1.08},
		{"poisson 1.2x", "sub-windows=60", 0.6, 12.6, 1.03},
		{"bursty", "sliding-window", 2.1, 28.7, 1.50},
		{"bursty", "sub-windows=2", 19.4, 30.4, 2.00},
		{"bursty", "sub-windows=4", 5.3, 20.7, 1.63},
		{"bursty", "sub-windows=10", 2.9, 18.4, 1.63},
		{"bursty", "sub-windows=60", 1.0, 13.2, 1.87},
		{"boundary", "sliding-window", 0.0, 0.0, 1.00},
		{"boundary", "sub-windows=2", 0.0, 0.0, 1.00},
		{"boundary", "sub-windows=4", 0.0, 0.0, 1.00},
		{"boundary", "sub-windows=10", 0.0, 0.0, 1.00},
		{"boundary", "sub-windows=60", 0.0, 0.0, 1.00},
		{"ramp 0.5-3x", "sliding-window", -0.2, 40.3, 1.03},
		{"ramp 0.5-3x", "sub-windows=2", 0.4, 40.5, 1.17},
		{"ramp 0.5-3x", "sub-windows=4", 0.3, 39.5, 1.09},
		{"ramp 0.5-3x", "sub-windows=10", 0.3, 40.9, 1.04},
		{"ramp 0.5-3x", "sub-windows=60", 0.3, 41.8, 1.01},
	}
	for _, q := range quoted {
		r := got[q.shape][q.alg]
		if diff(r.net, q.net) > 1 || diff(r.differ, q.differ) > 1 || diff(r.peak, q.peak) > 0.01 {
			t.Errorf("%s %s: net %+.1f%% differ %.1f%% peak %.2fx; the documentation says %+.1f%% %.1f%% %.2fx", q.shape, q.alg, r.net, r.differ, r.peak, q.net, q.differ, q.peak)
		}
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}
