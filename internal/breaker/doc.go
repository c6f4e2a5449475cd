// Package breaker is the circuit breaker that package fallback and package
// redisstore share: it only counts, the caller makes the call and tells it
// how the call went.
//
// A Breaker is Closed while the dependency answers; Threshold failures in a
// row open it, and while Open no call is let through. When the open period
// ends it is HalfOpen: exactly one caller gets the probe, the others are
// still turned away. A probe that succeeds closes it; one that fails opens
// it again for twice the previous period, up to MaxOpenFor. A probe whose
// outcome says nothing about the dependency (the caller gave up, the
// request itself was invalid) is handed to the next caller.
//
// The state is one atomic word: a call through a Closed breaker costs one
// atomic load to enter and one to report a success, and never allocates.
// Periods are read from an injected core.Clock, so tests drive the breaker
// with a coretest.Clock and no sleeps.
package breaker
