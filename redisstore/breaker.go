package redisstore

import (
	"errors"
	"math"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// BreakerConfig says when the circuit breaker that keeps calls off a
// failing Redis opens and how long it stays open ([WithBreaker]). A zero
// field takes its default, but the zero BreakerConfig turns the breaker
// off.
//
// A closed breaker counts round trips (a pipeline is one) over a sliding
// Window of the clock, cut into ten buckets that leave it one at a time.
// Only evidence that the server is failing is a failure (see "When Redis
// fails" in the package documentation); a caller that gave up, or a
// request refused for a reason of its own, is counted nowhere. At each
// failure it opens if either holds:
//
//   - the window holds at least MinCalls round trips and at least
//     FailureRate percent of them failed (the server fails often);
//   - the previous bucket and the current one (a tenth of the window each)
//     hold failures and no success, at least three of them (the server
//     fails every call).
//
// The first rule is resilience4j's time-based window with
// minimumNumberOfCalls and failureRateThreshold. The second exists because
// the first is slow on the outage a breaker is for: a server that is down
// or hangs fails every call, but the window's earlier successes keep the
// rate below the threshold for up to a whole window, and a hung server is
// asked only a few times a second, each call waiting out the timeout. The
// second rule opens within one to two buckets (1–2 s by default) of such
// an outage, plus the timeout. Neither rule opens on a pause of the process
// (a GC pause, a starved scheduler, a spike of load) shorter than a
// bucket: the calls it makes fail together, at its end, after the
// successes of the bucket before and followed by calls that succeed.
//
// While open, no call goes to Redis for OpenFor; then one call probes it.
// A probe that succeeds closes the breaker and starts the window afresh;
// one that fails opens it again for twice as long, up to four times
// OpenFor: 1 s, 2 s, 4 s, 4 s... by default.
type BreakerConfig struct {
	// Window is the span of time over which round trips are counted
	// (default 10 s, in buckets of 1 s; at least 10 ms). 10 s holds enough
	// calls at any real traffic for a rate to mean something, and makes a
	// pause of the process (tens to hundreds of milliseconds) a small part
	// of it; it bounds how long an old failure still counts.
	Window time.Duration
	// MinCalls is how many round trips the window must hold before their
	// failure rate opens the breaker (default 20; from 1 to 2³⁰): a handful
	// is no rate. A pipeline is one round trip however many calls it
	// carries, and with batching a limiter has at most two round trips in
	// flight to a server: a pause of the process fails at most two at once,
	// never the 20 that make a rate.
	MinCalls int
	// FailureRate is the share of failed round trips, in percent, that
	// opens the breaker (default 50; from 1 to 100). A server that fails
	// half its round trips is not one to wait on, while a healthy server on
	// a busy machine fails very few: none in this package's spike test (8
	// limiters × 64 goroutines on a process whose every core is busy).
	FailureRate int
	// OpenFor is how long the breaker first stays open (default 1 s): a
	// dead server is asked once a second, and after a blip (a failover, a
	// restart) Redis decides again a second later. Failed probes double it,
	// up to four times OpenFor: a long outage costs one probe every 4 s by
	// default, and Redis decides again at most 4 s after it is back.
	OpenFor time.Duration
}

// breakerRule is the breaker's rule under o, the defaults filled in.
func (o *options) breakerRule() breaker.Rule {
	c := o.breaker
	maxOpen := 4 * c.OpenFor
	if c.OpenFor > math.MaxInt64/4 {
		maxOpen = c.OpenFor
	}
	return breaker.Rule{Window: c.Window, MinCalls: c.MinCalls, FailureRate: c.FailureRate,
		OpenFor: c.OpenFor, MaxOpenFor: maxOpen}.Or(breaker.Defaults)
}

// errCircuitOpen is the cause of the *core.StoreError that Allow and
// Refund return at once, with no round trip, while the circuit breaker of
// the server that holds the key is open. Calls waiting for a round trip
// when the breaker opens get it too. errors.Is(err, core.ErrStore) holds
// as for any other store failure, so the adapters' failure mode applies
// unchanged, and WithFallback decides locally.
var errCircuitOpen = errors.New("redisstore: circuit breaker open, Redis not called; it failed too often and is probed until it answers")

// The errors of a breaker that turns a call away, made once so that
// failing fast allocates nothing. Callers must not modify them.
var (
	errOpenAllow   = &core.StoreError{Op: "allow", Err: errCircuitOpen}
	errOpenRefund  = &core.StoreError{Op: "refund", Err: errCircuitOpen}
	errOpenRelease = &core.StoreError{Op: "release", Err: errCircuitOpen}
	errOpenRenew   = &core.StoreError{Op: "renew", Err: errCircuitOpen}
)

// errOpen is the error of a call that the open breaker turns away.
func errOpen(code byte) error {
	switch code {
	case 'r':
		return errOpenRefund
	case 'l':
		return errOpenRelease
	case 'n':
		return errOpenRenew
	}
	return errOpenAllow
}

// settle tells b what a round trip showed about the server (see classify);
// err is the round trip's error when it failed.
func settle(b *breaker.Breaker, v verdict, err error, probe bool) {
	switch v {
	case answered:
		b.Success(probe)
	case failed:
		b.Failure(err, probe)
	default:
		b.Inconclusive(probe)
	}
}

// breakers calls f with each of l's breakers: its server's, or a Cluster's
// one per master.
func (l *Limiter) breakers(f func(*breaker.Breaker)) {
	see := func(r *route) {
		if r != nil && r.b != nil {
			f(r.b)
		}
	}
	see(l.one)
	if m := l.masters; m != nil {
		see(m.unknown)
		for _, r := range *m.byAddr.Load() {
			see(r)
		}
	}
}

// breakerState is the worst state of l's breakers (Open before HalfOpen
// before Closed); Closed without a breaker.
func (l *Limiter) breakerState() breaker.State {
	worst := breaker.Closed
	l.breakers(func(b *breaker.Breaker) {
		switch s := b.State(); {
		case s == breaker.Open:
			worst = s
		case s == breaker.HalfOpen && worst == breaker.Closed:
			worst = s
		}
	})
	return worst
}
