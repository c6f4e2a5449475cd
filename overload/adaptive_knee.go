package overload

import "math"

// The knee's constants (see atKnee), measured in the simulation
// (internal/overloadsim, seeds 1-8; benchmarks/results/
// 2026-11-28-overload-drift-knee.txt has every variant tried).
const (
	// kneeMin is the least limit the knee is held at: below it a window
	// measures few requests, and a limit of a few requests moves by
	// whole requests anyway.
	kneeMin = 16
	// kneeWindows is how many windows in a row must agree on the knee
	// before the limit is set from it; the gradient rules until then.
	kneeWindows = 8
	// kneeWeight is how far the knee moves toward one window's estimate:
	// a window's estimate has a spread of about 6 % at 50 workers, the
	// knee's, weighing each window 1/32, under 1 %.
	kneeWeight = 1.0 / 32
	// kneeJump is how far (in log) a window's estimate may be from the
	// knee before it is taken as a change rather than noise: 3 times
	// the spread of one window's. Two windows in a row must say so.
	kneeJump = 0.2
	// kneeSettled is how far (in log) the gradient may have moved the
	// limit over the kneeWindows that agree: farther, and the limit is
	// still climbing to the knee, not at it.
	kneeSettled = 0.1
	// kneeShare is the part of the tolerance the limit is held above
	// the knee: 1 + 0.55 × 0.1, 5.5 %, by default. 0.5 let noise take
	// the limit below the capacity at 25 workers (goodput under 95 %
	// for seconds); 0.6 took it past 1.15 × the capacity now and then.
	kneeShare = 0.55
	// kneeClimb is how much evidence (see atKnee), in standard errors of
	// a window's mean, says the limit is below the knee: 13 and 20 gave
	// false alarms, the gradient's noise for a few windows, and the limit
	// past 1.15 × the capacity on some seeds; with 30, the limit follows
	// a doubled capacity in 0.9 s at 2×.
	kneeClimb = 30
	// fastGap is how many windows must pass after a probe for a sudden
	// fall of the latency (see atKnee) before the next one may probe.
	fastGap = 16
	// probeFull and probeWindows: a probe from kneeMin up measures
	// probeFull requests, in at most probeWindows windows (see
	// probeWindow).
	probeFull, probeWindows = 256, 8
)

// kneeState is the knee the limit is held at (see atKnee).
type kneeState struct {
	at   float64 // the knee, requests (0: none)
	run  int     // windows in a row that agreed with it
	out  int     // the side (+1, -1) of the last window far from it
	from float64 // the limit at the start of the run
	gap  int     // windows since the last probe for a fall of latency
	up   float64 // the evidence that the limit is below the knee
}

// atKnee returns the limit's gradient from the knee, or g where the knee
// does not rule. It holds the limit at a fixed ratio of the knee, the
// limit at which requests begin to queue, rather than steering it by each
// window's latency: a window's mean latency has a spread of about 6 % at
// 50 workers, and with the limit following every window the limit spread
// as widely (over 10 minutes at 2×, 0.8-1.4 × the capacity).
//
// Under a sustained overload (a window that refused, past the slow start,
// at a limit of kneeMin or more) with the limit L past the knee K, the
// queue holds L − K and the mean latency is the baseline × L / K, so each
// window estimates the knee as x = L × baseline / mean. The knee is the
// running mean of x (each window weighs at least kneeWeight), and once
// kneeWindows windows in a row agree with it while the gradient moved the
// limit by less than kneeSettled, the limit is 1 + kneeShare × (tol − 1)
// times the knee. Below the knee x is the limit itself, so the knee, and
// the limit with it, would climb by only kneeShare × (tol − 1) ×
// kneeWeight a window (4 s to follow a doubled capacity at 2×); so the
// windows' log(x / knee), which averages 0 at the knee and log(ratio)
// below it, is summed past half of log(ratio) (a CUSUM test), and once
// the sum passes kneeClimb standard errors the gradient rules again.
//
// A window whose x is farther than kneeJump from the knee is noise until
// the next says the same: then the knee starts again from x and the
// gradient rules for kneeWindows windows (the capacity changed). That
// run is judged settled against the limit before the change, so the
// knee rules again at once only if the limit came back near it, and
// otherwise after a second run (with the run judged from the limit at
// its own start, the queueing model's limit settled 2.6 s after a slower
// service on seed 1, against 2 s allowed: adaptive_sim_test.go). If x
// rose, the service may instead have got faster, with the baseline stale
// high: the knee would follow the latency up and hold the limit too high,
// where no probe at the knee's depth could tell; so a probe runs first
// (at most one per fastGap windows), and the knee follows only if x is
// still high after it.
func (e *estimator) atKnee(during, mean, se float64, refused bool, g float64) float64 {
	k := &e.knee
	if e.slow || !refused || during < kneeMin || mean <= 0 {
		k.at, k.run, k.out, k.up = 0, 0, 0, 0
		return g
	}
	ratio := 1 + kneeShare*(e.tol-1)
	held := min(max(ratio*k.at/during, gradMin), gradMax)
	if e.drops > 0 && k.run >= kneeWindows {
		return held // the drops lower it (see close)
	}
	x := during * e.base / mean
	k.gap++
	if k.at == 0 {
		k.at, k.run, k.out, k.from = x, 1, 0, during
		return g
	}
	if d := math.Log(x / k.at); math.Abs(d) > kneeJump {
		side := 1
		if d < 0 {
			side = -1
		}
		settled := k.run >= kneeWindows
		switch {
		case settled && k.out != side:
			k.out = side // one window: noise, until the next agrees
			return held
		case settled && side > 0 && k.gap >= fastGap:
			k.gap, k.out = 0, 0
			e.saturated = probeAfter
			return held
		}
		if !settled {
			k.from = during // settled: judged from the limit before the change
		}
		k.at, k.run, k.out, k.up = x, 1, 0, 0
		return g
	}
	k.out = 0
	if k.run >= kneeWindows {
		// Below the knee x is the limit, ratio × the knee: the log of
		// x / knee averages log(ratio) there and 0 at the knee. Sum
		// what lies past half-way (a CUSUM test), and start again when
		// the sum passes kneeClimb standard errors.
		k.up = max(0, k.up+math.Log(x/k.at)-math.Log(ratio)/2)
		if se > 0 && k.up > kneeClimb*se/mean {
			k.at, k.run, k.from, k.up = x, 1, during, 0
			return g
		}
	}
	k.run++
	k.at *= math.Pow(x/k.at, max(kneeWeight, 1/float64(k.run)))
	switch {
	case k.run < kneeWindows:
		return g
	case k.run == kneeWindows && math.Abs(math.Log(during/k.from)) > kneeSettled:
		k.at, k.run, k.from = x, 1, during // still climbing
		return g
	}
	return min(max(ratio*k.at/during, gradMin), gradMax)
}

// probeDepth is what a probe divides the limit by. At the knee the limit
// is 1 + kneeShare × (tol − 1) times the knee, so a probe below it by tol
// runs below the capacity if the baseline is right, and costs little (at
// 25 workers, probes by tol² lost enough goodput to miss 95 %). But if
// the baseline is stale high by k, the knee and the limit are k times
// too high, and a probe by tol still has a queue: its mean is the
// baseline × (1 + kneeShare × (tol − 1)) / tol, 4 % under it by default,
// too little to tell from noise at once. So a probe that measured under
// the baseline by a standard error is followed soon by one deeper by the
// knee's ratio (by tol × 1.055): below the capacity if the baseline is
// stale by less than tol (its mean is then the service's latency), at
// the baseline / tol if by more; either way a tenth or more under a
// stale baseline, which moves toward it (see endProbe), and the next
// probe follows soon again while they disagree.
// Elsewhere the gradient holds the limit at up to tol × the capacity, and
// a probe divides it by tol².
func (e *estimator) probeDepth() float64 {
	switch {
	case e.knee.run < kneeWindows:
		return e.tol * e.tol
	case e.probeLow:
		return e.tol * (1 + kneeShare*(e.tol-1))
	}
	return e.tol
}

// restore puts the limit back where it was before an overload once the
// load is calm again: the windows of a calm load raise the limit only
// when the requests in flight reach half of it (busy), which a load well
// under the capacity does seldom, so after an overload that cut it the
// limit took anywhere from under a second to over ten to get back. The
// limit of the last calm window is kept, and the first window of a new
// calm spell (calmWindows in a row that refused nothing) raises the limit
// to it. If the overload came from a loss of capacity, the limit is above
// it again, as it was before; the first windows with a queue cut it.
func (e *estimator) restore(refused bool) {
	switch {
	case refused:
	case e.calm == calmWindows:
		e.limit = min(max(e.limit, e.calmLimit), e.max)
	case e.calm > calmWindows:
		e.calmLimit = e.limit
	}
}

// gradient is close's g before drops.
func (e *estimator) gradient(mean, se float64) float64 {
	target := e.tol * e.base
	switch {
	case mean < target-se/2:
		return min((target-se/2)/mean, gradMax)
	case mean > target+se:
		return max((target+se)/mean, gradMin)
	}
	return 1
}
