package httpclient

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/retry"
	"github.com/floodgate/floodgate/overload"
)

// Option configures a transport. The retry options have the names,
// defaults and meaning of package grpcclient's.
type Option func(*options)

type options struct {
	retry.Policy
	clock     core.Clock
	statuses  []int
	retryable func(*http.Request) bool
	throttle  *overload.Throttle // WithThrottle's, or nil
	used      []string           // names of the options given, to refuse misplaced ones
	errs      option.Errors
}

// DefaultStatusCodes are the statuses NewRetryTransport retries unless
// WithStatusCodes says otherwise: 429 Too Many Requests and 503 Service
// Unavailable, the two that come with Retry-After.
var DefaultStatusCodes = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}

// WithMaxAttempts sets how many times NewRetryTransport sends a request in
// all, the first time included (default 3). 1 turns
// retries off.
func WithMaxAttempts(n int) Option {
	return func(o *options) {
		o.use("WithMaxAttempts")
		o.SetMaxAttempts(&o.errs, n)
	}
}

// WithBackoff sets the capped exponential backoff of NewRetryTransport:
// before retry n (1, 2, …) it waits the server's delay, if the response
// gives one, plus a uniformly random duration in [0, min(max,
// base·2^(n-1))) (full jitter). The server's delay says when a retry can
// succeed; the jitter spreads the clients it refused at one instant.
// Defaults: 100ms and 5s.
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) {
		o.use("WithBackoff")
		o.SetBackoff(&o.errs, base, max)
	}
}

// WithMaxWait bounds how long a transport waits for one request: each is
// the longest single wait it accepts (default a minute), total the longest
// all of a request's retries may wait together (default 3 minutes). Both
// must be > 0: 0 is an error, not the default, so to change one bound give
// the other's default. The request's context bounds every wait too.
//
// For NewRetryTransport, each is the longest delay a response may ask for
// (Retry-After, or the RateLimit fields), as in grpcclient: a response
// asking for longer is returned to the caller at once rather than waited
// out. A retry whose delay would take the request's waits past total is
// not made either (the response is returned), and the jitter, which comes
// on top of the delay, never takes them past it. So the whole wait of one
// request is at most (WithMaxAttempts−1)·(each + the backoff's max), and at
// most total.
//
// For NewLimitedTransport, each bounds the sum of the waits the limiter
// asks for before a request is sent: a refusal or a shaping delay that
// would take the sum past it fails the request at once with a *LimitError.
// total does not apply there (the transport makes no retries), but it
// must still be > 0.
func WithMaxWait(each, total time.Duration) Option {
	return func(o *options) {
		o.use("WithMaxWait")
		o.SetMaxWait(&o.errs, each, total)
	}
}

// withRand sets the source of NewRetryTransport's jitter (default
// math/rand/v2's Float64): tests pass a fixed one.
func withRand(f func() float64) Option {
	return func(o *options) {
		o.use("WithRand")
		o.SetRand(&o.errs, f)
	}
}

// withSleep sets how a transport waits: tests pass one that advances a
// fake clock.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) {
		o.use("WithSleep")
		o.SetSleep(&o.errs, f)
	}
}

// withClock sets the clock NewRetryTransport reads to turn a Retry-After
// HTTP-date into a delay (default core.SystemClock): tests pass the fake
// clock of the server they talk to.
func withClock(c core.Clock) Option {
	return func(o *options) {
		o.use("WithClock")
		if o.errs.Require(c != nil, "WithClock(nil); leave the option out for core.SystemClock") {
			o.clock = c
		}
	}
}

// WithStatusCodes sets the response statuses NewRetryTransport retries
// (default DefaultStatusCodes). Each must be a status code from 100 to
// 599; at least one is required.
func WithStatusCodes(codes ...int) Option {
	return func(o *options) {
		o.use("WithStatusCodes")
		ok := o.errs.Require(len(codes) > 0, "WithStatusCodes(): want at least one status; use WithMaxAttempts(1) to turn retries off")
		for _, c := range codes {
			ok = o.errs.Require(100 <= c && c <= 599, "WithStatusCodes(%d): want a status from 100 to 599", c) && ok
		}
		if ok {
			o.statuses = slices.Clone(codes)
		}
	}
}

// WithRetryable sets which requests NewRetryTransport may send more than
// once (default Idempotent). A request whose body cannot be replayed (a
// body and no GetBody) is never retried, whatever f says.
func WithRetryable(f func(*http.Request) bool) Option {
	return func(o *options) {
		o.use("WithRetryable")
		if o.errs.Require(f != nil, "WithRetryable(nil); leave the option out for Idempotent") {
			o.retryable = f
		}
	}
}

func (o *options) use(name string) { o.used = append(o.used, name) }

// newOptions applies opts for the constructor ctor, which accepts only the
// options named in allowed (all when allowed is nil).
func newOptions(opts []Option, ctor string, allowed []string) (*options, error) {
	o := &options{
		Policy:    retry.Defaults(),
		clock:     core.SystemClock,
		statuses:  DefaultStatusCodes,
		retryable: Idempotent,
	}
	o.errs.Prefix = "httpclient: "
	if err := option.Apply(o, &o.errs, opts); err != nil {
		return nil, err
	}
	if allowed != nil {
		for _, name := range o.used {
			if !slices.Contains(allowed, name) {
				o.errs.Require(false, "%s does not apply to %s, which takes only %s", name, ctor, strings.Join(allowed, ", "))
			}
		}
	}
	if err := o.errs.Err(); err != nil {
		return nil, err
	}
	return o, nil
}
