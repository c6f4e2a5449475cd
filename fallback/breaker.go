package fallback

import "time"

// BreakerConfig says when a circuit breaker opens and how long it stays
// open. [WithBreaker] sets a [Limiter]'s, and redisstore.WithBreaker a
// redisstore.Limiter's, with the same defaults; a zero field takes its
// default.
//
// A Closed breaker counts outcomes over a sliding Window of the clock, cut
// into ten buckets that leave it one at a time: here each call to the
// primary that succeeded or failed (a store error or the timeout), in
// redisstore each round trip to a server. Outcomes that say nothing about
// the store — a caller that gave up, a request refused for a reason of its
// own — are counted nowhere. At each failure it opens if either holds:
//
//   - the window holds at least MinCalls outcomes and at least FailureRate
//     percent of them are failures (the store fails often);
//   - the previous bucket and the current one (a tenth of the window each)
//     hold failures and no success, at least three of them (the store
//     fails every call).
//
// The first rule is resilience4j's time-based window with
// minimumNumberOfCalls and failureRateThreshold. The second exists because
// the first is slow on the outage a breaker is for: a store that is down
// or hangs fails every call, but the window's earlier successes keep the
// rate below the threshold for up to a whole window, and a hung store is
// asked only a few times a second, each call waiting out the timeout. The
// second rule opens within one to two buckets (1–2 s by default) of such an
// outage, plus the timeout. Neither rule opens on a pause of the process (a
// GC pause, a starved scheduler, a spike of load) shorter than a bucket:
// the calls it makes fail together, at its end, after the successes of
// the bucket before and followed by calls that succeed, so they are
// neither failures over a whole bucket with no success nor, unless they are
// half of all calls in the window, the rate.
//
// While open, no call goes to the store for OpenFor; then one call probes
// it. A probe that succeeds closes the breaker and starts the window
// afresh; one that fails opens it again for twice as long, up to
// MaxOpenFor.
type BreakerConfig struct {
	// Window is the span of time over which outcomes are counted (default
	// DefaultWindow, 10 s, in buckets of 1 s; at least 10 ms). 10 s holds
	// enough calls at any real traffic for a rate to mean something, and
	// makes a pause of the process (tens to hundreds of milliseconds) a
	// small part of it; it bounds how long an old failure still counts.
	Window time.Duration
	// MinCalls is how many outcomes the window must hold before their rate
	// opens the breaker (default DefaultMinCalls, 20; from 1 to 2³⁰): a
	// handful of outcomes is no rate. At less than 2 calls a second the
	// rate never opens it, and only the second rule can: so few calls cost
	// little however they fail.
	MinCalls int
	// FailureRate is the share of failures, in percent, that opens the
	// breaker (default DefaultFailureRate, 50; from 1 to 100). A store that
	// fails half its calls is not one to wait on, while a healthy store on
	// a busy machine fails very few: none in redisstore's spike test (8
	// instances × 64 goroutines on a process whose every core is busy).
	FailureRate int
	// OpenFor is how long the breaker first stays open (default
	// DefaultOpenFor, 1 s): a dead store is asked once a second, and after
	// a blip (a dropped connection, a Redis failover) the store decides
	// again a second later.
	OpenFor time.Duration
	// MaxOpenFor caps the open period that failed probes double (default
	// DefaultMaxOpenFor, 4 s, or OpenFor if longer; equal to OpenFor for no
	// doubling): a long outage costs one probe every 4 s, and the store
	// decides again at most 4 s after it is back.
	MaxOpenFor time.Duration
}
