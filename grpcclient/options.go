package grpcclient

import (
	"context"
	"time"

	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/retry"
	"github.com/floodgate/floodgate/overload"
)

// Option configures the client interceptors. The options have the names,
// defaults and meaning of httpclient's retry options.
type Option func(*options)

// options is the retry policy, shared with httpclient's transports
// (internal/retry), and the errors of invalid options.
type options struct {
	retry.Policy
	throttle *overload.Throttle // WithThrottle's, or nil
	errs     option.Errors
}

// WithMaxAttempts sets how many times a call is tried in all, the first
// time included (default 3). 1 turns retries off.
func WithMaxAttempts(n int) Option {
	return func(o *options) { o.SetMaxAttempts(&o.errs, n) }
}

// WithBackoff sets the capped exponential backoff whose full jitter is added
// to the server's retry delay: before retry n (1, 2, …) the client waits the
// server's delay plus a uniformly random duration in [0, min(max,
// base·2^(n-1))). The server's delay says when a retry can succeed; the
// jitter spreads the clients it refused at one instant so that they do not
// all come back at the same one. Defaults: 100ms and 5s.
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) { o.SetBackoff(&o.errs, base, max) }
}

// WithMaxWait bounds how long a call waits before its retries: each is the
// longest retry delay a server may ask for (default a minute), total the
// longest all of a call's retries may wait together (default 3 minutes).
// Both must be > 0: 0 is an error, not the default, so to change one bound
// give the other's default. A refusal asking for longer than each, or for a
// delay that would take the call's waits past total, is returned at once
// rather than waited out; the jitter never takes the waits past total. The
// call's deadline bounds every wait too.
func WithMaxWait(each, total time.Duration) Option {
	return func(o *options) { o.SetMaxWait(&o.errs, each, total) }
}

// withRand sets the source of jitter (default math/rand/v2's Float64):
// tests pass a fixed one.
func withRand(f func() float64) Option {
	return func(o *options) { o.SetRand(&o.errs, f) }
}

// withSleep sets how the client waits before a retry: tests pass one that
// advances a fake clock.
func withSleep(f func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) { o.SetSleep(&o.errs, f) }
}

func newOptions(opts []Option) (*options, error) {
	o := &options{Policy: retry.Defaults()}
	o.errs.Prefix = "grpcclient: "
	if err := option.Apply(o, &o.errs, opts); err != nil {
		return nil, err
	}
	return o, nil
}
