package overload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/tally"
)

// ErrThrottled is what a [ThrottledError] wraps: a client's [Throttle]
// rejected a request, which was not sent. Test for it with errors.Is;
// httpclient and grpcclient return errors that match it.
var ErrThrottled = errors.New("overload: request rejected locally by the client's adaptive throttle, not sent")

// ThrottledError is the error of a request a [Throttle] rejected
// ([Throttle.Rejection] makes it).
type ThrottledError struct {
	// Probability is the share of requests the throttle was rejecting.
	Probability float64
	// RetryAfter is what is left of the last wait the backend asked for
	// when it refused a request (Retry-After, RetryInfo), or 0 when it
	// asked for none or that wait is over. The throttle itself cannot say
	// when it will let a request through: its rejections are random.
	RetryAfter time.Duration
}

// Error says that the request was not sent, and why.
func (e *ThrottledError) Error() string {
	s := fmt.Sprintf("%v: the backend refused too many requests lately (rejecting %.0f%% here)", ErrThrottled, 100*e.Probability)
	if e.RetryAfter > 0 {
		s += fmt.Sprintf("; it asked for a wait of %v", e.RetryAfter)
	}
	return s
}

// Unwrap returns ErrThrottled.
func (e *ThrottledError) Unwrap() error { return ErrThrottled }

// The defaults of a ThrottleConfig; the Throttle type's comment says why.
const (
	defaultThrottleWindow = 10 * time.Second
	defaultThrottleK      = 2
	minThrottleWindow     = tally.Buckets * time.Millisecond
)

// ThrottleConfig configures a [Throttle]. The zero value means the
// defaults.
type ThrottleConfig struct {
	// Window is how far back the throttle counts requests and accepts
	// (default 10s; at least 10ms). Keep it well above the requests'
	// latency: a request not answered within a tenth to a fifth of it
	// counts as refused until it is.
	Window time.Duration
	// K is how many requests the client may send for each one the backend
	// accepts before it starts rejecting some locally (default 2, the SRE
	// book's; at least 1). Lower leaves the backend less work to refuse;
	// higher lets more requests try.
	K float64
	// Clock is read once per Allow, and by what reads the window or a
	// wait (nil: core.SystemClock).
	Clock core.Clock
	// Rand returns a uniformly random number in [0, 1) for each request
	// the throttle might reject (nil: math/rand/v2's Float64). It must be
	// safe for concurrent use; tests pass a fixed sequence.
	Rand func() float64
}

// Throttle is Google SRE's client-side adaptive throttling: a client that
// sees its backend refuse requests rejects some of its own before sending
// them, so that a fleet of clients stops hammering a backend that is
// shedding load. Over a sliding window it counts the requests sent and
// those the backend accepted (answered without refusing for overload),
// and rejects a new request with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// Each request the client sends asks [Throttle.Allow], and says how it
// ended with [ThrottleTicket.End]. Make one with [NewThrottle] (the zero
// Throttle is not usable), one per backend, shared by its clients' calls.
// It is safe for concurrent use; Allow and End take no lock and never
// allocate.
//
// A request counts when it is sent, not when it is answered: a backend
// that stops answering throttles its clients as one that refuses does.
// Until it is answered it counts as sent but not accepted, except while
// it is young (sent in the current tenth of the window or the one
// before), so that a burst of requests that have just gone out does not
// count against a backend that has not had the time to answer them.
//
// Requests the throttle rejects are not counted at all. The SRE book
// counts them, which holds a backend's load to K times what it accepts,
// but slows recovery: once the backend is back, the rejections the window
// still holds keep the probability high, and the few requests let through
// grow it back only by a factor of e every Window/K, about
// (Window/K)·ln(0.9·rate·Window) to get back to 90 % (32 to 61 s at 100
// requests a second over 10s, in TestThrottleRecovery's simulation with
// them counted; go-zero and kratos users have asked for this change).
// Without them the probability depends on the share of sent requests the
// backend refuses, and a recovered backend's accepts soon outweigh the
// refusals: the client is back to 90 % of its throughput after 0.4 s on
// average at 1000 requests a second, 0.9 s at 100, 1.7 s at 10 and 3.5 s
// at 1 (the slowest of 40 seeded runs: 9 s, at 1 a second), all within
// the 10s window (TestThrottleRecovery). The price is more load on a
// backend that refuses all or part of it: a client trying λ requests a
// second against a backend accepting C of them sends about √(λ·K·C),
// more than SRE's K·C but far below λ, and about √(λ/Window) to a
// backend that refuses everything (TestThrottlePartialOverload,
// TestThrottleShedsAtTheFormulasRate).
//
// Window defaults to 10s; SRE uses about two minutes, failsafe-go one,
// kratos three seconds. Recovery takes a fraction of it here, so a longer
// one would meet the goal too, but would hold an episode against the
// backend long after it ended; one of a few seconds holds too few answers
// at low rates, and its tenth (the time a young request has to be
// answered) would be shorter than many requests take.
type Throttle struct {
	width int64 // a bucket's length in ns
	k     float64
	clock core.Clock
	rand  func() float64
	// sent counts the requests sent in each bucket, accepted those of them
	// the backend accepted, and refused those it refused: the others are
	// not answered yet.
	sent, accepted, refused tally.Window
	// waitUntil is the instant until which the backend's last refusal
	// asked to be left alone, in clock ns.
	waitUntil atomic.Int64
}

// NewThrottle returns a Throttle configured by c. It returns an error for
// a negative or too short Window, or a K below 1.
func NewThrottle(c ThrottleConfig) (*Throttle, error) {
	switch {
	case c.Window == 0:
		c.Window = defaultThrottleWindow
	case c.Window < minThrottleWindow:
		return nil, fmt.Errorf("overload: ThrottleConfig.Window is %v; want at least %v, or 0 for the default %v", c.Window, minThrottleWindow, defaultThrottleWindow)
	}
	switch {
	case c.K == 0:
		c.K = defaultThrottleK
	case !(c.K >= 1) || math.IsInf(c.K, 1):
		return nil, fmt.Errorf("overload: ThrottleConfig.K is %v; want a finite number >= 1 (a client that sends fewer requests than the backend accepts would reject some while nothing is refused), or 0 for the default %d", c.K, defaultThrottleK)
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return &Throttle{width: int64(c.Window) / tally.Buckets, k: c.K, clock: c.Clock, rand: c.Rand}, nil
}

// ThrottleTicket is a request [Throttle.Allow] let through. Say how it
// ended with End, once. The zero ThrottleTicket's End does nothing.
type ThrottleTicket struct {
	t      *Throttle
	bucket int64
}

// Allow reports whether a request may be sent now, and counts it as sent
// if so. A request it rejects must not be sent: return
// [Throttle.Rejection] to the caller instead. A request it lets through
// must say how it ended with the ticket's End.
func (t *Throttle) Allow() (ThrottleTicket, bool) {
	n := t.bucket(t.clock.Now())
	if p := t.probability(n); p > 0 && t.rand() < p {
		return ThrottleTicket{}, false
	}
	if !t.sent.Add(n) {
		// The clock moved on while this request was decided: it is sent,
		// but counted nowhere, and its ending with it.
		return ThrottleTicket{}, true
	}
	return ThrottleTicket{t: t, bucket: n}, true
}

// End says how the request ended: core.EndDone when the backend answered
// it (whatever the answer, unless it refused the request for overload),
// core.EndDropped when it refused it for overload or did not answer in
// time (retryAfter is the wait the refusal asked for, if any, which
// [ThrottledError.RetryAfter] reports), core.EndIgnored when the ending
// says nothing about the backend (the caller gave up first): the request
// is then not counted at all.
func (k ThrottleTicket) End(e core.Ending, retryAfter time.Duration) {
	t := k.t
	if t == nil {
		return
	}
	switch e {
	case core.EndDone:
		t.accepted.Add(k.bucket)
	case core.EndDropped:
		t.refused.Add(k.bucket)
		if retryAfter > 0 {
			now := t.clock.Now()
			until := now + int64(retryAfter)
			if until < now { // past the clock's range: as good as forever
				until = math.MaxInt64
			}
			t.waitUntil.Store(until)
		}
	default:
		t.sent.Sub(k.bucket)
	}
}

// Probability returns the probability with which Allow rejects a request
// now.
func (t *Throttle) Probability() float64 { return t.probability(t.bucket(t.clock.Now())) }

// Rejection returns the error for a request Allow rejected: a
// *ThrottledError (errors.Is(err, ErrThrottled)) with the probability now
// and what is left of the backend's last requested wait.
func (t *Throttle) Rejection() *ThrottledError {
	now := t.clock.Now()
	return &ThrottledError{
		Probability: t.probability(t.bucket(now)),
		RetryAfter:  time.Duration(max(0, t.waitUntil.Load()-now)),
	}
}

// bucket returns the number of the bucket that holds the instant now.
func (t *Throttle) bucket(now int64) int64 { return tally.Bucket(now, t.width) }

// probability is the rejection probability of the window whose newest
// bucket is n.
func (t *Throttle) probability(n int64) float64 {
	sent, accepted, young := throttleSums(&t.sent, &t.accepted, &t.refused, n)
	if young >= sent {
		return 0
	}
	if r, a := float64(sent-young), float64(accepted); r > t.k*a {
		return throttleProbability(r, a, t.k)
	}
	return 0
}

// throttleProbability is the SRE book's rule: reject with probability
// max(0, (requests − K·accepts) / (requests + 1)).
func throttleProbability(requests, accepts, k float64) float64 {
	return max(0, (requests-k*accepts)/(requests+1))
}
