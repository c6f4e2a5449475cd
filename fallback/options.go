package fallback

import (
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a [Limiter] made by [New].
type Option func(*options)

// The defaults; the option or field that sets each ([WithTimeout],
// [BreakerConfig]) says why it was chosen.
const (
	DefaultTimeout     = 500 * time.Millisecond
	DefaultWindow      = 10 * time.Second
	DefaultMinCalls    = 20
	DefaultFailureRate = 50
	DefaultOpenFor     = time.Second
	DefaultMaxOpenFor  = 4 * time.Second
)

// defaultRule is the breaker of a Limiter made without [WithBreaker].
var defaultRule = breaker.Rule{
	Window:      DefaultWindow,
	MinCalls:    DefaultMinCalls,
	FailureRate: DefaultFailureRate,
	OpenFor:     DefaultOpenFor,
	MaxOpenFor:  DefaultMaxOpenFor,
}

type options struct {
	timeout time.Duration
	rule    breaker.Rule
	clock   core.Clock
	observe func(Event)
	errs    option.Errors
}

func (o *options) require(ok bool, format string, args ...any) bool {
	return o.errs.Require(ok, format, args...)
}

// WithTimeout sets how long one call to the primary may take before the
// request is decided locally and the call counts as a failure (default
// [DefaultTimeout], 500 ms). A caller whose context ends sooner keeps its
// own deadline, and its expiry is the caller's, not a primary failure: keep
// the timeout below the deadlines your callers set, or a primary that hangs
// is never detected.
//
// It is the most a request waits on a primary that hangs before the
// breaker opens. It bounds the whole call, including any time the primary
// keeps the call waiting in this process: a redisstore.Limiter under load
// queues calls for its round trips, and bounds each round trip with a
// timeout of its own (redisstore.DefaultTimeout, also 500 ms) from when it
// is sent. 500 ms is far above a healthy Redis round trip (well under a
// millisecond within a region) and still short beside the budgets of the
// requests being limited, and a spike on a process short of CPU stays
// within it (redisstore's TestSpike, behind fallback), where 100 ms sent
// thousands of its decisions to the local limiter. The timeout is a
// context deadline, so it reads real time whatever [WithClock] sets, and
// it works only on a primary that honours its context (every Redis client
// does).
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if o.require(d > 0, "WithTimeout(%v): the timeout must be > 0", d) {
			o.timeout = d
		}
	}
}

// WithBreaker sets when the breaker opens and how long it stays open;
// zero fields of c keep their defaults (see [BreakerConfig]), so
// WithBreaker(BreakerConfig{MinCalls: 5}) changes only MinCalls.
func WithBreaker(c BreakerConfig) Option {
	return func(o *options) {
		r := breaker.Rule(c).Or(defaultRule)
		ok := true
		for _, p := range r.Problems() {
			ok = o.require(false, "WithBreaker: %s", p)
		}
		if ok {
			o.rule = r
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
		timeout: DefaultTimeout,
		rule:    defaultRule,
		clock:   core.SystemClock,
		errs:    option.Errors{Prefix: "fallback: "},
	}
	err := option.Apply(&o, &o.errs, opts)
	return o, err
}
