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
	// calmWindows is how many windows in a row that refuse nothing
	// turn the slow start on again: the limit no longer binds, and when
	// it binds again the knee may be far above it (a load that was cut
	// by an overload comes back).
	calmWindows = 8
	// foldFirst is how many requests the slow start folds into the
	// first baseline (see fold): a mean of 256 has a standard error of
	// about 3 % for a log-normal spread of σ = 0.5.
	foldFirst = 256
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
	warm      int     // windows of the warm-up so far (see close)
	probeFrom float64 // the limit before the probe
	slow      bool    // in the slow start (see close)
	baseN     int     // requests the first baseline measured (see fold)
	baseSq    float64 // the mean of their squared latencies
	wasPast   bool    // the last window was past the knee (see close and coldStart)
	warmed    bool    // the first slow start is over (see close)
	calm      int     // windows in a row that refused nothing
	calmLimit float64 // the limit while calm (see restore)
	probeLow  bool    // the last probe measured under the baseline (see endProbe)

	probe probeState
	knee  kneeState
}

// add counts one request that ended at now, admitted at start, and
// reports whether the window is due to close: it has measured at least
// minSamples requests (fewer in a cold start, see coldStart) and lasted
// twice the last mean latency, so that most of what it measures was
// admitted under the limit it judges.
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
	return e.n+e.drops >= e.need() && float64(now-e.winStart) >= 2*e.last
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
// The slow start: from the start, a window that refused requests with
// the latency below the band doubles the limit (gradMax), as TCP's
// slow start doubles its window until a loss; one in the band holds it.
// It ends at the first window whose latency is clearly past the band
// (above target + 2 se: a window at a small limit measures few requests,
// and one noisy window must not end it) or that drops requests, never at
// a limit of 1 (one request in flight has no queue); a cold start has
// rules of its own (see coldStart). Started from 1, the
// baseline is measured with no queue, and the doublings find the knee,
// where requests begin to wait (workers) or to share the cores
// (processor sharing), in about log2(N) windows, each as short as two
// latencies once the limit is 8 or more; the window past the knee halves
// the limit at most, and the gradient takes over. (Growth by the
// gradient alone, a tenth per window, took seconds from a low start: 11 %
// refused at half load in the queueing model.) The slow start runs again
// after a rebase, and after calmWindows windows in a row that refused
// nothing: a load that an overload cut comes back to a limit far below
// the knee (and that spell's first window restores the limit the calm
// load had before the overload: see restore).
//
// Under a sustained overload at a limit of kneeMin or more, once the
// windows agree on the knee, the limit is held at a fixed ratio of it
// rather than moved by each window's gradient (see atKnee).
//
// The baseline is the mean latency without a queue. A window that
// refused nothing, or ran at a limit of 1, measures the service as it
// is: the baseline moves baseStep toward its mean, either way (in the
// slow start, fold takes its first requests instead). A window that
// refused leaves it alone: raising it from a queue's latencies would
// let it creep up under a sustained overload, and lowering it from the
// windows that happen to be fast would ratchet it down on noise. Under overload only a rebase
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
		e.probing, e.probe = 1, probeState{first: mean, sum: mean * float64(e.n), n: e.n, windows: 1}
	case e.probing == 1:
		e.probeWindow(mean)
	case mean == 0 || e.warm < warmWindows-1:
		// The first window only lets the first requests end: started
		// together, the fastest of them end first, so they would measure
		// too low a latency.
		if mean > 0 {
			e.warm++
		}
	default:
		if e.warm < warmWindows {
			// The next is the first baseline, whether it refused or
			// not; the slow start folds its windows into it (one window
			// is too noisy to stand alone). If it refused, the windows
			// after may all refuse, and leave the baseline to the
			// probes: the first comes probeAgain windows after the slow
			// start (not after a warm-up at a limit of 1, which had no
			// queue to measure). The limit moves from the window after.
			e.warm++
			e.fold(mean, 0)
			if refused && during > 1 {
				e.saturated = probeAfter - probeAgain
			}
			break
		}
		// In the slow start, the first foldFirst requests make the
		// baseline (see fold).
		folding := e.slow && e.baseN < foldFirst
		cold := folding && !e.warmed // see coldStart
		e.warmed = !cold
		if e.calm++; refused {
			e.calm = 0
		} else if e.calm >= calmWindows {
			e.slow = true
		}
		e.restore(refused)
		switch {
		case refused && during > 1:
			e.saturated++
		case !folding:
			// A window that refused nothing, or ran one request at a
			// time (no queue, no core shared), measures the service as
			// it is.
			e.base += (mean - e.base) * baseStep
			fallthrough
		default:
			e.saturated = 0
		}
		if !busy {
			if folding {
				e.fold(mean, 0)
			}
			e.epLimit = 0
			break
		}
		g := e.gradient(mean, se)
		past := e.slow && during > 1 && e.pastKnee(mean, se, cold)
		switch {
		case !e.slow:
			if e.wasPast { // the cut that ended a cold start: held once
				g, e.wasPast = max(g, 1), false
			}
		case during > 1 && (e.drops > 0 || past && (e.wasPast || !cold)):
			// Past the knee: the gradient from here on.
			e.slow, e.wasPast = false, cold
			if cold {
				e.saturated = probeAfter - probeAgain
			}
		default:
			// Not clearly past the knee (at a limit of 1, never).
			if folding && !past {
				e.fold(mean, 0)
			}
			e.wasPast = past
			switch {
			case past:
				g = 1 // once, from a cold start: hold, and see
			case refused && (g > 1 || cold):
				g = gradMax
			case g < 1:
				g = 1 // in the band: hold, and see
			}
		}
		g = e.atKnee(during, mean, se, refused, g)
		g = e.rebase(during, mean, se, g)
		if e.drops > 0 {
			g = min(g, 1-float64(e.drops)/float64(e.n+e.drops)/2)
		}
		e.limit = min(max(e.limit*g, e.min), e.max)
		// No probe while a slow start folds: the fold measures the baseline.
		if e.saturated >= probeAfter && e.limit > e.min && !(e.slow && e.baseN < foldFirst) {
			e.probing, e.probeFrom, e.saturated = 3, e.limit, 0
			e.limit = max(e.limit/e.probeDepth(), e.min)
		}
	}
	if mean > 0 {
		e.last = mean
	}
	e.before = during
	e.sum, e.sumSq, e.n, e.drops, e.winStart = 0, 0, 0, 0, now
}

// published is the limit as the admission path uses it: rounded, within
// [min, max].
func (e *estimator) published() int64 {
	return int64(math.Round(min(max(e.limit, e.min), e.max)))
}
