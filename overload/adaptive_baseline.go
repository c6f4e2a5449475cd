package overload

import "math"

const (
	// warmWindows is how many windows the warm-up lasts: the first lets
	// the first requests end, the second is the first baseline (see
	// close and coldStart).
	warmWindows = 2
	// slowSamples is the fewest requests a window of a cold start
	// measures (see coldStart).
	slowSamples = 4
)

// coldStart reports whether the estimator is in its first slow start,
// folding its first baseline. A fresh Adaptive starts at its floor, often
// straight into an overload, and must find the capacity within a few
// dozen latencies of the service, however few requests that is. So the
// warm-up and the first slow start differ from the later ones:
//   - a window measures twice the limit (slowNeed), not minSamples:
//     two latencies below the knee (4 requests at the floor of 2, where
//     16 took 8 latencies), and longer past it;
//   - the warm-up is two windows, one ignored and one the first
//     baseline, and each later window not past the knee is folded into
//     it (fold weighs each window by its requests);
//   - a window that refused and is not past the knee doubles the limit,
//     even in the band: with few requests the band is wide, and holding
//     in it doubled 2, 3, 3, 4, 8;
//   - past the knee counts the baseline's error too (pastKnee), and one
//     window past it holds the limit; two in a row end the slow start:
//     one noisy window, or a noisy baseline of a few requests, used to
//     end it at a small limit, leaving the growth to the gradient; the
//     window after the cut that ends it holds the limit, since it still
//     measures the queue the doublings built (cut again on it, 16
//     workers at 5× went 32, 18.6, 10.4);
//   - no probe runs meanwhile (the fold measures the baseline, and the
//     doublings have not settled the limit a probe would start from; a
//     probe before the knee was found measured 6.6 requests on 4 workers
//     and raised the baseline by half); ended past the knee, the first
//     comes probeAgain windows later, since the baseline may rest on too
//     few requests (a tenth too low cuts the limit below the knee).
//
// In the queueing model at 2× (adaptive_cold_test.go), 16 workers at 20
// ms reach the capacity in 10-18 latencies, where they took 59-138.
func (e *estimator) coldStart() bool {
	return e.slow && !e.warmed && e.baseN < foldFirst
}

// need is how many requests the current window measures at least.
func (e *estimator) need() int {
	if e.warm < warmWindows || e.coldStart() {
		return e.slowNeed()
	}
	return minSamples
}

// slowNeed is how many requests a window of a cold start measures: twice
// the limit, from slowSamples to minSamples. Below the knee that is two
// latencies; past it, fewer requests end per latency than the limit
// admits, so the window lasts until it measures the queue a doubling
// made; and the first lets the requests admitted together at the start
// end.
func (e *estimator) slowNeed() int {
	return min(max(slowSamples, 2*int(e.limit)), minSamples)
}

// fold adds the window's mean to the baseline as a mean over all the
// requests folded so far, each window weighing at least least. The
// warm-up folds its second window, and the slow start its windows that
// are not clearly past the knee until foldFirst requests are folded: a
// window at a small limit measures few requests (4 at a limit of 2 in a
// cold start: a standard error of 27 %), and a baseline a tenth too low cuts the
// limit below the knee. A window in the band above the target may be
// folded too (leaving it out would bias the mean low), but only among
// the first foldFirst requests: it can raise the baseline by less than
// the tolerance once.
func (e *estimator) fold(mean, least float64) {
	e.baseN += e.n
	if e.baseN > 0 && e.n > 0 {
		w := max(float64(e.n)/float64(e.baseN), least)
		e.base += (mean - e.base) * w
		e.baseSq += (e.sumSq/float64(e.n) - e.baseSq) * w
	}
}

// pastKnee reports whether the slow start's window of mean latency (and
// standard error se) is clearly past the band: above target + 2 se. From
// a cold start (see close), both the window and the
// baseline may rest on a few requests (4 at a limit of 2), so the error
// counts the baseline's own too, and the spread is the widest of the
// smoothed one, the window's own and that of all the requests folded: a
// spread from 4 requests is often far too narrow, and would end the
// slow start on noise.
func (e *estimator) pastKnee(mean, se float64, cold bool) bool {
	if !cold {
		return mean > e.tol*e.base+2*se
	}
	cv2 := e.cv2
	if n := float64(e.n); n > 1 && mean > 0 {
		cv2 = max(cv2, (e.sumSq/n-mean*mean)/(mean*mean)*n/(n-1))
	}
	if n := float64(e.baseN); n > 1 && e.base > 0 {
		cv2 = max(cv2, (e.baseSq-e.base*e.base)/(e.base*e.base)*n/(n-1))
	}
	v := mean * mean * cv2 / float64(max(e.n, 1))
	if e.baseN > 0 {
		v += e.base * e.base * cv2 / float64(e.baseN)
	}
	return mean > e.tol*e.base+2*math.Sqrt(v)
}

// rebase raises the baseline when the latency is not the queue's. A run
// starts at a window that lowers the limit for latency (g < 1) and lasts
// until the limit is back above where it is judged from. If within it the
// limit is halved (or at the floor) and was within a quarter of that
// during the window before too (which let the requests admitted under
// the higher limit, and their queue's latency, end; a limit just halved
// is held for a window for this, since cut on each window it would
// reach the floor first, through windows that grow long), and the mean
// latency is within a tenth of the highest since the run was judged
// from (the highest, since a queue's latency lags the limit), give or
// take two standard errors (a small limit measures few requests), the
// service itself is slower (a slower dependency, a deploy), and cutting
// further would only shed what it could serve: the baseline becomes the
// mean latency, it holds for the window, and the slow start grows the
// limit back (folding its first requests into the new baseline); it
// returns the gradient, held where it must be. If the latency fell, the run
// is judged again from there. In a queue, halving the limit roughly
// halves the latency, so under overload this never fires; and it fires
// at no set time, only in answer to the limit's own cuts.
func (e *estimator) rebase(during, mean, se, g float64) float64 {
	e.epLatency = max(e.epLatency, mean)
	halved := during <= e.epLimit/2 || during <= e.min
	switch {
	case e.epLimit != 0 && during > e.epLimit:
		e.epLimit = 0 // the limit is back: the run is over
	case e.epLimit != 0 && halved && e.before > 1.25*during:
		// Halved, but only just: hold it for a window, so that the
		// next measures what came in under it. (Cut on, it would be
		// halved again each window down to the floor before a window
		// could judge it, and windows at a small limit are long.)
		return max(g, 1)
	case e.epLimit != 0 && halved:
		if mean+2*se >= rebaseFall*e.epLatency {
			// The knee moved with the service: the slow start finds it
			// again (growth by the gradient alone, from limits that the
			// cuts left small, takes many long windows), and folds its
			// first requests into the new baseline.
			e.base, e.epLimit, e.slow, e.baseN = mean, 0, true, e.n
			e.baseSq = e.sumSq / float64(max(e.n, 1))
			return 1
		}
		e.epLimit, e.epLatency = during, mean // the latency followed: judge from here
	}
	if e.epLimit == 0 && g < 1 {
		e.epLimit, e.epLatency = during, mean
	}
	return g
}

// probeState is what a probe measured so far (see probeWindow).
type probeState struct {
	first, sum float64 // the first window's mean; the latencies' sum
	n, windows int     // the requests and windows measured
}

// probeWindow counts a window that a probe measures, and ends the probe
// when it has measured enough. A probe from a limit below kneeMin
// measures two windows and takes the mean of their means. One from
// kneeMin up measures until probeFull requests (at most probeWindows
// windows), and weighs each request alike: at 25 workers two windows
// hold about 110 requests, whose mean has a standard error of 5 %, and
// at the knee (see atKnee) the limit follows every error of the baseline
// one for one.
func (e *estimator) probeWindow(mean float64) {
	p := &e.probe
	wide := e.probeFrom >= kneeMin
	more := wide && p.n+e.n < probeFull && p.windows < probeWindows
	p.sum += mean * float64(e.n)
	p.n += e.n
	p.windows++
	switch {
	case more:
	case !wide:
		e.endProbe((p.first+mean)/2, 0)
	case p.n > 0:
		m := p.sum / float64(p.n)
		e.endProbe(m, m*math.Sqrt(e.cv2/float64(p.n)))
	default:
		e.endProbe(mean, 0)
	}
}

// endProbe ends a probe whose mean latency is mean, with standard error
// se (0: not known).
//
// A baseline that windows which refuse cannot
// move may go stale under a sustained overload: too high if the service
// got faster (a shift in the mix of requests; the limit then settles
// too high, with a queue), too low after a noisy measure. So after
// probeAfter windows that refused requests with no window that did not,
// the limit is divided by probeDepth for a few windows: the first lets
// the requests admitted before end, the next measure. (Measuring only
// the requests admitted since would favour the fast ones, which end
// first.)
//
// If the baseline is right or low, the limit was at most tol × the
// capacity, so the probe runs below the capacity, with no queue: its
// mean is the latency without a queue, and the baseline moves half-way
// to it, up or down (half-way, since the probe's mean is noisy; a
// quarter of the way when they differ by less than two standard errors,
// so that noise moves the baseline less). If the baseline is too high
// by a factor k > tol, the probe still has a queue, and its mean, about
// the baseline / tol, is lower than any noise would make it: the
// baseline takes it whole (when it is lower by two standard errors more
// than that: one noisy probe taken whole would pull the baseline down
// by a tenth, and at the knee the limit with it). Either way the probe
// cannot raise the baseline above the service's latency without a
// queue, so probes cannot make it creep. A probe that moved it by more
// than 5 % is followed by another probeAgain windows later.
//
// The probe costs little: it runs only when the limit is refusing
// requests anyway, never pins the limit to a floor, runs near the
// capacity (nearly all the throughput), and a service within its
// capacity sees none. The limit goes back to where it was after it, and
// the next windows correct it.
func (e *estimator) endProbe(mean, se float64) {
	e.probing, e.limit = 0, e.probeFrom
	if mean <= 0 {
		return
	}
	if math.Abs(mean-e.base) > 0.05*e.base {
		e.saturated = probeAfter - probeAgain
	}
	// A probe at the knee that measured under the baseline by a standard
	// error may have found it stale high (see probeDepth): the next, soon,
	// runs deeper.
	if e.probeLow = se > 0 && mean < e.base-se; e.probeLow {
		e.saturated = probeAfter - probeAgain
	}
	if mean < e.base/e.tol-2*se {
		e.base = mean
		return
	}
	step := 0.5
	if se > 0 && math.Abs(mean-e.base) <= 2*se {
		step = 0.25
	}
	e.base += (mean - e.base) * step
}
