package grpcmw

import (
	"context"
	"time"

	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/retry"
)

// ClientOption configures the client interceptors.
type ClientOption func(*clientOptions)

// clientOptions is the retry policy, shared with httpclient's transports
// (internal/retry), and the errors of invalid options.
type clientOptions struct {
	retry.Policy
	errs option.Errors
}

// Client defaults.
const (
	// DefaultMaxAttempts is how many times a call is tried in all, unless
	// WithMaxAttempts says otherwise.
	DefaultMaxAttempts = retry.DefaultMaxAttempts
	// DefaultBackoffBase and DefaultBackoffMax bound the jitter added to a
	// server's retry delay (see WithBackoff).
	DefaultBackoffBase = retry.DefaultBackoffBase
	DefaultBackoffMax  = retry.DefaultBackoffMax
	// DefaultMaxWait is the longest retry delay a server may ask for before
	// the client gives up instead (see WithMaxWait).
	DefaultMaxWait = retry.DefaultMaxWait
	// DefaultMaxTotalWait is the longest a call waits for its retries in
	// all (see WithMaxTotalWait).
	DefaultMaxTotalWait = retry.DefaultMaxTotalWait
)

// WithMaxAttempts sets how many times a call is tried in all, the first
// time included (default DefaultMaxAttempts). 1 turns retries off.
func WithMaxAttempts(n int) ClientOption {
	return func(o *clientOptions) {
		o.SetMaxAttempts(&o.errs, n)
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
		o.SetBackoff(&o.errs, base, max)
	}
}

// WithMaxWait sets the longest retry delay a server may ask for (default
// DefaultMaxWait): a refusal asking for longer is returned at once rather
// than waited out. The call's deadline bounds every wait too.
func WithMaxWait(d time.Duration) ClientOption {
	return func(o *clientOptions) {
		o.SetMaxWait(&o.errs, d)
	}
}

// WithMaxTotalWait bounds the waits of all a call's retries together
// (default DefaultMaxTotalWait): a retry whose server delay would take
// them past it is not made (the refusal is returned), and the jitter never
// does. The call's deadline bounds them too.
func WithMaxTotalWait(d time.Duration) ClientOption {
	return func(o *clientOptions) {
		o.SetMaxTotalWait(&o.errs, d)
	}
}

// WithRand sets the source of jitter: a function returning a uniformly
// random number in [0, 1) (default math/rand/v2's Float64). Tests pass a
// fixed one.
func WithRand(f func() float64) ClientOption {
	return func(o *clientOptions) {
		o.SetRand(&o.errs, f)
	}
}

// WithSleep sets how the client waits before a retry (default: a timer that
// stops early, returning ctx's error, when ctx ends). Tests pass one that
// advances a fake clock.
func WithSleep(f func(ctx context.Context, d time.Duration) error) ClientOption {
	return func(o *clientOptions) {
		o.SetSleep(&o.errs, f)
	}
}

func newClientOptions(opts []ClientOption) (*clientOptions, error) {
	o := &clientOptions{Policy: retry.Defaults()}
	o.errs.Prefix = "grpcmw: "
	if err := option.Apply(o, &o.errs, opts); err != nil {
		return nil, err
	}
	return o, nil
}
