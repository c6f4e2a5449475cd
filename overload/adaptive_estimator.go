package overload

import "math"

// The estimator's constants. None is a setting: each follows from what
// it guards against, as its comment says.
const (
	// minSamples is the fewest requests a window measures: with fewer,
	// one slow request moves the mean too much to act on.
	minSamples = 16
	// gradMin and gradMax bound one window's change of the limit: at
	// most halved (a queue cannot grow faster than the limit lets it),
	// at most doubled (only when the latency is half the target, that is
	// when the baseline is stale high and falls meanwhile).
	gradMin, gradMax = 0.5, 2.0
	// baseStep is how far the baseline moves toward a window's mean
	// latency when it may (see close): an eighth, so that one odd window
	// moves it little and a lasting change is followed within about
	// twenty windows (half-way in five).
	baseStep = 1.0 / 8
	// rebaseFall: a latency that fell by less than a tenth while the
	// limit halved is not our queue's (see rebase).
	rebaseFall = 0.9
	// probeAfter is how many windows that refused requests may pass
	// without one that refused none before a probe checks the baseline
	// (see endProbe); probeAgain, how many pass before the next when a
	// probe moved the baseline by more than 5 %, or after a warm-up
	// that refused.
	probeAfter, probeAgain = 64, 2
	// warmWindows is the first window whose mean counts toward the
	// baseline (see close).
	warmWindows = 3
	// capFactor caps a latency counted, as a multiple of the baseline
	// (see add). The cap must sit far above what a service's latencies
	// spread to without a queue, or it would cut their mean, and the
	// baseline learnt from it, and the cap again. Eight times the mean
	// is beyond 99.9 % of a log-normal spread of σ = 0.7.
	capFactor = 8
)

// estimator moves the limit with the latencies of the requests it
// admits. Its state is guarded by Adaptive.mu.
type estimator struct {
	min, max, tol float64

	limit float64 // the limit, before rounding
	base  float64 // the baseline latency, ns (0: none yet)
	last  float64 // the last window's mean latency, ns (0: none yet)

	// The current window.
	winStart int64
	sum      float64 // latencies of requests done, each capped (see add)
	sumSq    float64 // their squares
	cv2      float64 // the squared coefficient of variation of latencies, smoothed
	n, drops int

	// A run of windows since the limit fell for latency (see rebase): the
	// limit it is judged from (0: no run), and the highest mean latency
	// since.
	epLimit, epLatency float64
	before             float64 // the limit during the window before

	saturated int     // windows that refused since the baseline was refreshed
	probing   int     // windows of the probe left: 3 flushes, 2 and 1 measure
	probeSum  float64 // the probe's measures so far
	warm      int     // windows of the warm-up so far (see close)
	probeFrom float64 // the limit before the probe
}

// add counts one request that ended at now, admitted at start, and
// reports whether the window is due to close: it has measured at least
// minSamples requests and lasted twice the last mean latency, so that
// most of what it measures was admitted under the limit it judges.
//
// A latency counts at most capFactor × the baseline, so that one stray
// slow request (a GC pause, a cold cache) cannot halve the limit by
// itself.
func (e *estimator) add(start, now int64, dropped bool) bool {
	if dropped {
		e.drops++
	} else {
		lat := float64(max(now-start, 0))
		if e.base > 0 {
			lat = min(lat, capFactor*e.base)
		}
		e.sum += lat
		e.sumSq += lat * lat
		e.n++
	}
	return e.n+e.drops >= minSamples && float64(now-e.winStart) >= 2*e.last
}

// close ends the window at now. busy reports that the requests in flight
// reached half the limit during it, refused that the limit refused some.
//
// The limit moves only in busy windows, by the gradient g, L' = L × g
// within [min, max]: with target = tol × base and se the standard error
// of the window's mean latency,
//
//	g = (target − se/2) / mean   if mean < target − se/2 (at most gradMax)
//	g = (target + se) / mean     if mean > target + se (at least gradMin)
//	g = 1                        otherwise,
//
// lowered to 1 − share/2 when a share of the window's requests were
// dropped. The standard error is the window's mean times the square root
// of cv²/n, with cv² the squared coefficient of variation of latencies,
// smoothed over windows as the baseline is: a window's own spread is too
// noisy (a window that happens to hold no slow request has both a low
// mean and a low spread, and would look significant).
//
// The limit rises while the latency is within tol of the baseline and
// falls in proportion to a clear excess: in a queue
// the mean latency grows as the limit does, so one window brings it back
// to about tol × the service's capacity. A window's noise (a few
// requests, a wide spread of latencies) widens the band in which the
// limit holds, rather than cutting it. (The band is half as wide below
// the target, so that a limit cut by a burst grows back within a few
// windows even when they measure few requests: with a whole standard
// error there, the queueing model refused up to 0.23 % of the requests
// between bursts at 0.8× the capacity, against 0.18 % with half.)
//
// The baseline is the mean latency without a queue. A window that
// refused nothing measures the service as it is: the baseline moves
// baseStep toward its mean, either way. A window that refused leaves it
// alone: raising it from a queue's latencies would let it creep up under
// a sustained overload, and lowering it from the windows that happen to
// be fast would ratchet it down on noise. Under overload only a rebase
// (the service itself got slower) or a probe moves it. (A queue that
// builds up under a high limit before the first refusal, as when a step
// of load finds the limit well above the capacity, still lifts it for a
// few windows; the probes bring it back.)
func (e *estimator) close(now int64, busy, refused bool) {
	mean, se := e.last, 0.0
	if e.n > 0 && e.sum > 0 { // a clock that did not move measures nothing
		mean = e.sum / float64(e.n)
		cv2 := max(e.sumSq/float64(e.n)-mean*mean, 0) / (mean * mean)
		if e.cv2 == 0 {
			e.cv2 = cv2
		}
		e.cv2 += (cv2 - e.cv2) * baseStep
		se = mean * math.Sqrt(e.cv2/float64(e.n))
	}
	during := e.limit
	switch {
	case e.probing == 3:
		e.probing = 2 // what this window measured was admitted before the probe
	case e.probing == 2:
		e.probing, e.probeSum = 1, mean
	case e.probing == 1:
		e.endProbe((e.probeSum + mean) / 2)
	case mean == 0 || e.warm < warmWindows-1:
		// The first windows only let the first requests end: started
		// together, the fastest of them end first, so they would measure
		// too low a latency.
		if mean > 0 {
			e.warm++
		}
	default:
		if e.warm < warmWindows+2 {
			// The next three are the first baseline, their average
			// whether they refused or not (one window is too noisy to
			// stand alone). If one refused, the windows after may all
			// refuse, and leave the baseline to the probes: the first
			// comes probeAgain windows later. The limit moves from the
			// window after.
			e.warm++
			e.base += (mean - e.base) / float64(e.warm-warmWindows+1)
			if refused {
				e.saturated = probeAfter - probeAgain
			}
			break
		}
		if refused {
			e.saturated++
		} else {
			e.base += (mean - e.base) * baseStep
			e.saturated = 0
		}
		if !busy {
			e.epLimit = 0
			break
		}
		g := e.gradient(mean, se)
		e.rebase(during, mean, se, g)
		if e.drops > 0 {
			g = min(g, 1-float64(e.drops)/float64(e.n+e.drops)/2)
		}
		e.limit = min(max(e.limit*g, e.min), e.max)
		if e.saturated >= probeAfter && e.limit > e.min {
			e.probing, e.probeFrom, e.saturated = 3, e.limit, 0
			e.limit = max(e.limit/(e.tol*e.tol), e.min)
		}
	}
	if mean > 0 {
		e.last = mean
	}
	e.before = during
	e.sum, e.sumSq, e.n, e.drops, e.winStart = 0, 0, 0, 0, now
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

// rebase raises the baseline when the latency is not the queue's. A run
// starts at a window that lowers the limit for latency (g < 1) and lasts
// until the limit is back above where it is judged from. If within it the
// limit is halved (or at the floor) and was within a quarter of that
// during the window before too (which let the requests admitted under
// the higher limit, and their queue's latency, end), and the mean
// latency is within a tenth of the highest since the run was judged
// from (the highest, since a queue's latency lags the limit), give or
// take two standard errors (a small limit measures few requests), the
// service itself is slower (a slower dependency, a deploy), and cutting
// further would only shed what it could serve: the baseline becomes the
// mean latency, and the limit grows back. If the latency fell, the run
// is judged again from there. In a queue, halving the limit roughly
// halves the latency, so under overload this never fires; and it fires
// at no set time, only in answer to the limit's own cuts.
func (e *estimator) rebase(during, mean, se, g float64) {
	e.epLatency = max(e.epLatency, mean)
	halved := during <= e.epLimit/2 || during <= e.min
	switch {
	case e.epLimit != 0 && during > e.epLimit:
		e.epLimit = 0 // the limit is back: the run is over
	case e.epLimit != 0 && halved && e.before <= 1.25*during:
		if mean+2*se >= rebaseFall*e.epLatency {
			e.base, e.epLimit = mean, 0
			return
		}
		e.epLimit, e.epLatency = during, mean // the latency followed: judge from here
	}
	if e.epLimit == 0 && g < 1 {
		e.epLimit, e.epLatency = during, mean
	}
}

// endProbe ends a probe. A baseline that windows which refuse cannot
// move may go stale under a sustained overload: too high if the service
// got faster (a shift in the mix of requests; the limit then settles
// too high, with a queue), too low after a noisy measure. So after
// probeAfter windows that refused requests with no window that did not,
// three windows run at the limit divided by tol² (a sixth lower by
// default): the first lets the requests admitted before end, the next
// two measure. (Measuring only the requests admitted since would favour
// the fast ones, which end first.)
//
// If the baseline is right or low, the limit was at most tol × the
// capacity, so the probe runs below the capacity, with no queue: its
// mean is the latency without a queue, and the baseline moves half-way
// to it, up or down (half-way, since two windows' mean is noisy). If the
// baseline is too high by a factor k > tol, the probe still has a queue,
// and its mean, about the baseline / tol, is lower than any noise would
// make it: the baseline takes it whole. Either way the probe
// cannot raise the baseline above the service's latency without a
// queue, so probes cannot make it creep. A probe that moved it by more
// than 5 % is followed by another probeAgain windows later.
//
// The probe costs little: it runs only when the limit is refusing
// requests anyway, never pins the limit to a floor, runs near the
// capacity (nearly all the throughput), and a service within its
// capacity sees none. The limit goes back to where it was after it, and
// the next windows correct it.
func (e *estimator) endProbe(mean float64) {
	e.probing, e.limit = 0, e.probeFrom
	if mean <= 0 {
		return
	}
	if math.Abs(mean-e.base) > 0.05*e.base {
		e.saturated = probeAfter - probeAgain
	}
	if mean < e.base/e.tol {
		e.base = mean
		return
	}
	e.base += (mean - e.base) / 2
}

// published is the limit as the admission path uses it: rounded, within
// [min, max].
func (e *estimator) published() int64 {
	return int64(math.Round(min(max(e.limit, e.min), e.max)))
}
