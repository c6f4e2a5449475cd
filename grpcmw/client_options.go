package grpcmw

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// ClientOption configures the client interceptors.
type ClientOption func(*clientOptions)

type clientOptions struct {
	attempts int
	base     time.Duration
	cap      time.Duration
	maxWait  time.Duration
	rand     func() float64
	sleep    func(context.Context, time.Duration) error
	errs     option.Errors
}

// Client defaults.
const (
	// DefaultMaxAttempts is how many times a call is tried in all, unless
	// WithMaxAttempts says otherwise.
	DefaultMaxAttempts = 3
	// DefaultBackoffBase and DefaultBackoffMax bound the jitter added to a
	// server's retry delay (see WithBackoff).
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	// DefaultMaxWait is the longest retry delay a server may ask for before
	// the client gives up instead (see WithMaxWait).
	DefaultMaxWait = time.Minute
)

// WithMaxAttempts sets how many times a call is tried in all, the first
// time included (default DefaultMaxAttempts). 1 turns retries off.
func WithMaxAttempts(n int) ClientOption {
	return func(o *clientOptions) {
		if o.errs.Require(n >= 1, "WithMaxAttempts(%d): want at least 1", n) {
			o.attempts = n
		}
	}
}

// WithBackoff sets the capped exponential backoff whose full jitter is added
// to the server's retry delay: before retry n (1, 2, …) the client waits the
// server's delay plus a uniformly random duration in [0, min(max,
// base·2^(n-1))). The server's delay says when a retry can succeed; the
// jitter spreads the clients it refused at one instant so that they do not
// all come back at the same one. Defaults: DefaultBackoffBase,
// DefaultBackoffMax.
func WithBackoff(base, max time.Duration) ClientOption {
	return func(o *clientOptions) {
		if o.errs.Require(0 <= base && base <= max, "WithBackoff(%v, %v): want 0 <= base <= max", base, max) {
			o.base, o.cap = base, max
		}
	}
}

// WithMaxWait sets the longest retry delay a server may ask for (default
// DefaultMaxWait): a refusal asking for longer is returned at once rather
// than waited out. The call's deadline bounds every wait too.
func WithMaxWait(d time.Duration) ClientOption {
	return func(o *clientOptions) {
		if o.errs.Require(d > 0, "WithMaxWait(%v): want > 0", d) {
			o.maxWait = d
		}
	}
}

// WithRand sets the source of jitter: a function returning a uniformly
// random number in [0, 1) (default math/rand/v2's Float64). Tests pass a
// fixed one.
func WithRand(f func() float64) ClientOption {
	return func(o *clientOptions) {
		if o.errs.Require(f != nil, "WithRand(nil); leave the option out for math/rand/v2's Float64") {
			o.rand = f
		}
	}
}

// WithSleep sets how the client waits before a retry (default: a timer that
// stops early, returning ctx's error, when ctx ends). Tests pass one that
// advances a fake clock.
func WithSleep(f func(ctx context.Context, d time.Duration) error) ClientOption {
	return func(o *clientOptions) {
		if o.errs.Require(f != nil, "WithSleep(nil); leave the option out for a timer that stops when the context ends") {
			o.sleep = f
		}
	}
}

func newClientOptions(opts []ClientOption) (*clientOptions, error) {
	o := &clientOptions{
		attempts: DefaultMaxAttempts,
		base:     DefaultBackoffBase,
		cap:      DefaultBackoffMax,
		maxWait:  DefaultMaxWait,
		rand:     rand.Float64,
		sleep:    pipeline.Sleep,
	}
	o.errs.Prefix = "grpcmw: "
	if err := option.Apply(o, &o.errs, opts); err != nil {
		return nil, err
	}
	return o, nil
}
