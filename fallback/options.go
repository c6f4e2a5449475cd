package fallback

import (
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a [Limiter] made by [New].
type Option func(*options)

// The defaults; the option that sets each ([WithTimeout] and so on) says
// why it was chosen.
const (
	DefaultTimeout          = 100 * time.Millisecond
	DefaultFailureThreshold = 3
	DefaultOpenFor          = time.Second
	DefaultMaxOpenFor       = 4 * time.Second
)

type options struct {
	timeout    time.Duration
	threshold  int
	openFor    time.Duration
	maxOpenFor time.Duration // 0: DefaultMaxOpenFor, or openFor if longer
	clock      core.Clock
	observe    func(Event)
	errs       option.Errors
}

func (o *options) require(ok bool, format string, args ...any) bool {
	return o.errs.Require(ok, format, args...)
}

// WithTimeout sets how long one call to the primary may take before the
// request is decided locally and the call counts as a failure (default
// [DefaultTimeout], 100 ms). A caller whose context ends sooner keeps its
// own deadline, and its expiry is the caller's, not a primary failure: keep
// the timeout below the deadlines your callers set, or a primary that hangs
// is never detected.
//
// 100 ms is far above a healthy Redis round trip (well under a millisecond
// within a region) and far below the budgets of the requests being
// limited: it is the most a request waits on a primary that hangs before
// the breaker opens. The timeout is a context deadline, so it reads real
// time whatever [WithClock] sets, and it works only on a primary that
// honours its context (every Redis client does).
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if o.require(d > 0, "WithTimeout(%v): the timeout must be > 0", d) {
			o.timeout = d
		}
	}
}

// WithFailureThreshold sets how many primary failures in a row open the
// breaker (default [DefaultFailureThreshold], 3): one dropped connection
// or slow command is decided locally without opening, while an outage
// opens the breaker after three requests (concurrent ones count alike), so
// that few requests wait out the timeout.
func WithFailureThreshold(n int) Option {
	return func(o *options) {
		if o.require(n >= 1 && n <= 1<<30, "WithFailureThreshold(%d): the threshold must be from 1 to %d", n, 1<<30) {
			o.threshold = n
		}
	}
}

// WithOpenFor sets how long the breaker stays open after it opens
// (default [DefaultOpenFor], 1 s): the primary is not called in that time.
// Each failed probe doubles the period, up to [WithMaxOpenFor]; a
// successful one starts over from d. One second asks a dead primary at
// most once a second, and after a blip (a dropped connection, a Redis
// failover) returns to it a second later.
func WithOpenFor(d time.Duration) Option {
	return func(o *options) {
		if o.require(d > 0, "WithOpenFor(%v): the open period must be > 0", d) {
			o.openFor = d
		}
	}
}

// WithMaxOpenFor caps the open period that failed probes double (default
// [DefaultMaxOpenFor], 4 s, or the [WithOpenFor] period if that is
// longer; pass the same d to both to turn the doubling off). It bounds how
// long decisions stay local after the primary is back (see the package
// documentation), while a long outage costs one probe every d: 4 s keeps
// both small.
func WithMaxOpenFor(d time.Duration) Option {
	return func(o *options) {
		if o.require(d > 0, "WithMaxOpenFor(%v): the longest open period must be > 0", d) {
			o.maxOpenFor = d
		}
	}
}

// WithClock sets the clock that times the breaker's open periods (default
// core.SystemClock). Tests pass a coretest.Clock. It does not time calls
// to the primary: see [WithTimeout].
func WithClock(c core.Clock) Option {
	return func(o *options) {
		if o.require(c != nil, "WithClock(nil); leave the option out for the system clock") {
			o.clock = c
		}
	}
}

// WithObserver sets a function told of every decision (which side made
// it), every primary failure (with its error) and every change of the
// breaker's state; see [Event]. It runs on the request's goroutine, so it
// must be fast and safe for concurrent use. Without it, nothing is called.
func WithObserver(f func(Event)) Option {
	return func(o *options) {
		if o.require(f != nil, "WithObserver(nil); leave the option out for no observer") {
			o.observe = f
		}
	}
}

func buildOptions(opts []Option) (options, error) {
	o := options{
		timeout:   DefaultTimeout,
		threshold: DefaultFailureThreshold,
		openFor:   DefaultOpenFor,
		clock:     core.SystemClock,
		errs:      option.Errors{Prefix: "fallback: "},
	}
	if err := option.Apply(&o, &o.errs, opts); err != nil {
		return o, err
	}
	if o.maxOpenFor == 0 {
		o.maxOpenFor = max(DefaultMaxOpenFor, o.openFor)
	}
	o.require(o.maxOpenFor >= o.openFor, "WithMaxOpenFor(%v) is shorter than WithOpenFor(%v); raise it, or pass the same value to both for no backoff", o.maxOpenFor, o.openFor)
	return o, o.errs.Err()
}
