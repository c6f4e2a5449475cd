package overload_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// throttleSim drives one client's Throttle on a fake clock: requests try
// to go out evenly, rate a second; the backend answers each latency after
// it was sent, accepting it unless it was sent during the outage
// [healthy, healthy+outage), when it accepts only capacity requests a
// second (none if 0). It checks every decision against the formula, and
// measures the recovery.
type throttleSim struct {
	rate                     float64
	latency                  time.Duration
	healthy, outage, after   time.Duration
	seed                     uint64
	window                   time.Duration
	capacity                 int     // accepted a second during the outage
	tried, rejected          int     // during the outage
	sumP, sumPQ              float64 // Σp and Σp(1−p) over the outage's attempts
	outageSent               int     // over the outage's second half
	recovery                 time.Duration
	firstSecond, firstWindow float64 // share sent after the outage ends
}

func (s *throttleSim) run(t *testing.T) {
	t.Helper()
	src := rand.New(rand.NewPCG(s.seed, 33))
	var r float64
	calls := 0
	th, clock := newThrottle(t, overload.ThrottleConfig{Window: s.window, Rand: func() float64 {
		calls++
		r = src.Float64()
		return r
	}})
	type inFlight struct {
		due     time.Duration
		tk      overload.ThrottleTicket
		refused bool
	}
	var queue []inFlight
	end := s.healthy + s.outage + s.after
	step := time.Duration(float64(time.Second) / s.rate)
	var lastHigh time.Duration
	var sentSecond, triedSecond, sentWindow, triedWindow int
	second, acceptedInSecond := time.Duration(-1), 0
	for at := time.Duration(0); at < end; at += step {
		clock.Set(t0.Add(at))
		for len(queue) > 0 && queue[0].due <= at {
			e := core.EndDone
			if queue[0].refused {
				e = core.EndDropped
			}
			queue[0].tk.End(e, 0)
			queue = queue[1:]
		}
		p := th.Probability()
		calls = 0
		tk, ok := th.Allow()
		switch {
		case p == 0 && (!ok || calls != 0):
			t.Fatalf("at %v: probability 0, yet Allow = %v after %d draws", at, ok, calls)
		case p > 0 && (calls != 1 || ok != (r >= p)):
			t.Fatalf("at %v: probability %v, draw %v (%d draws): Allow = %v", at, p, r, calls, ok)
		}
		inOutage := at >= s.healthy && at < s.healthy+s.outage
		since := at - s.healthy - s.outage
		switch {
		case inOutage:
			s.tried++
			s.sumP += p
			s.sumPQ += p * (1 - p)
			if !ok {
				s.rejected++
			} else if at >= s.healthy+s.outage/2 {
				s.outageSent++
			}
		case since >= 0:
			if p > 0.1 {
				lastHigh = since + step
			}
			if since < time.Second {
				triedSecond++
				sentSecond += b2i(ok)
			}
			if since < s.window {
				triedWindow++
				sentWindow += b2i(ok)
			}
		}
		if ok {
			refused := inOutage
			if inOutage && acceptedInSecond < s.capacity {
				refused = false
				acceptedInSecond++
			}
			queue = append(queue, inFlight{due: at + s.latency, tk: tk, refused: refused})
		}
		if sec := at.Truncate(time.Second); sec != second {
			second, acceptedInSecond = sec, 0
		}
	}
	s.recovery = lastHigh
	s.firstSecond = float64(sentSecond) / float64(triedSecond)
	s.firstWindow = float64(sentWindow) / float64(triedWindow)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A backend that refuses everything: each decision is the formula's (a
// request is rejected exactly when the draw falls below the probability),
// the share rejected is the mean probability, and the backend sees a
// small share of what the client tries.
func TestThrottleShedsAtTheFormulasRate(t *testing.T) {
	t.Parallel()
	s := &throttleSim{rate: 100, latency: 20 * time.Millisecond, healthy: 20 * time.Second,
		outage: 60 * time.Second, after: time.Second, seed: 1, window: 10 * time.Second}
	s.run(t)
	sd := math.Sqrt(s.sumPQ)
	if d := math.Abs(float64(s.rejected) - s.sumP); d > 4*sd {
		t.Errorf("rejected %d of %d, the probabilities sum to %.1f (sd %.1f)", s.rejected, s.tried, s.sumP, sd)
	}
	perSecond := float64(s.outageSent) / (s.outage / 2).Seconds()
	// Not counting local rejections, the client settles where
	// p = n/(n+1) for the n requests it sent in the window:
	// about √(rate/window) a second.
	model := math.Sqrt(s.rate / s.window.Seconds())
	t.Logf("outage: %d of %d tried rejected; the backend saw %.2f requests a second (model %.2f) of %v",
		s.rejected, s.tried, perSecond, model, s.rate)
	if perSecond > 1.5*model || perSecond < model/1.5 {
		t.Errorf("the backend saw %.2f requests a second during the outage, the model %.2f", perSecond, model)
	}
}

// A backend that accepts only part of the load: not counting local
// rejections, the client sends about √(rate·K·capacity) a second, where
// the SRE book's accounting would send K·capacity and no throttle rate.
func TestThrottlePartialOverload(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate     float64
		capacity int
	}{{100, 10}, {100, 50}, {1000, 100}} {
		s := &throttleSim{rate: c.rate, capacity: c.capacity, latency: 20 * time.Millisecond, healthy: 10 * time.Second,
			outage: 40 * time.Second, after: time.Second, seed: 2, window: 10 * time.Second}
		s.run(t)
		perSecond := float64(s.outageSent) / (s.outage / 2).Seconds()
		model := min(c.rate, math.Sqrt(c.rate*2*float64(c.capacity)))
		t.Logf("%v/s against a backend accepting %d/s: it saw %.1f/s (model %.1f; SRE's accounting %d/s)",
			c.rate, c.capacity, perSecond, model, 2*c.capacity)
		if perSecond > 1.25*model || perSecond < model/1.25 {
			t.Errorf("%v/s against %d/s: the backend saw %.1f/s, the model %.1f", c.rate, c.capacity, perSecond, model)
		}
	}
}

// After the backend recovers, a client is back to at least 90 % of its
// throughput (a rejection probability of at most 0.1, from then on)
// within one window: the goal. TestThrottleRecovery logs how long
// it takes at each rate.
func TestThrottleRecovery(t *testing.T) {
	t.Parallel()
	const window = 10 * time.Second
	for _, rate := range []float64{1, 10, 100, 1000} {
		// Three runs at each rate, one at the highest (kept short under
		// -race): the refusals the window holds when the outage ends are
		// those of its last window, whatever its length beyond.
		for seed := uint64(1); seed <= 3 && (seed == 1 || rate < 1000); seed++ {
			s := &throttleSim{rate: rate, latency: 20 * time.Millisecond, healthy: 10 * time.Second,
				outage: 30 * time.Second, after: 2 * window, seed: seed, window: window}
			s.run(t)
			t.Logf("%5.0f/s seed %d: probability ≤ 0.1 for good %v after the backend recovered; sent %.0f %% in the first second, %.0f %% in the first window",
				rate, seed, s.recovery, 100*s.firstSecond, 100*s.firstWindow)
			if s.recovery > window {
				t.Errorf("%v/s seed %d: back to 90 %% after %v, more than the window %v", rate, seed, s.recovery, window)
			}
		}
	}
}
