// Package breaker is redisstore's circuit breaker: it only counts, the
// caller makes the call and tells it how the call went.
//
// A Breaker is Closed while the dependency answers. It counts the outcomes
// reported over a sliding window of the clock (Window, cut into [Buckets]
// buckets that leave it one at a time) and opens on either of two rules,
// checked at each failure:
//
//   - Failing often: the window holds at least MinCalls outcomes and at
//     least FailureRate percent of them are failures, as resilience4j's
//     time-based window with minimumNumberOfCalls and failureRateThreshold.
//   - Failing every call: the previous bucket and the current one hold
//     failures and no success, at least [RunFailures] (3) failures between
//     them. A dependency that is down or hangs fails every call, but the
//     window's earlier successes would keep the rate below the threshold
//     for up to a whole window (a hung dependency fails only a few calls a
//     second, each after the caller's timeout, while the window still holds
//     the successes of seconds of healthy traffic); this rule opens the
//     breaker within one to two buckets instead. It needs failures spread
//     over a whole bucket with no success between them, which a pause of
//     the process or a spike of load, shorter than a bucket, does not give:
//     the calls that fail together at the end of a pause are followed by
//     calls that succeed, and the bucket before the pause holds the
//     successes before it.
//
// Outcomes that say nothing about the dependency (the caller gave up, the
// request itself was invalid) are reported as inconclusive and counted
// nowhere.
//
// While Open no call is let through. When the open period ends it is
// HalfOpen: exactly one caller gets the probe, the others are still turned
// away. A probe that succeeds closes it and starts the window afresh; one
// that fails opens it again for twice the previous period, up to
// MaxOpenFor. A probe whose outcome says nothing about the dependency is
// handed to the next caller.
//
// The state is one atomic word and the window two atomic words per
// bucket: a call through a Closed breaker costs one atomic load to enter
// and, to report a success, a clock reading and one atomic add; it takes
// no lock and never allocates. A failure reads the window's 20 words.
// Periods and buckets are read from an injected core.Clock, so tests drive
// the breaker with a coretest.Clock and no sleeps.
package breaker
