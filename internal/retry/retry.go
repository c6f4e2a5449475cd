package retry

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Defaults of a Policy, which the client packages' option docs state.
const (
	DefaultMaxAttempts = 3
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	DefaultMaxWait     = time.Minute
	// DefaultMaxTotalWait bounds the waits of all a request's retries
	// together: above what the other defaults allow (two waits of up to a
	// minute and 5 s of jitter each), so that it binds only when the
	// attempts are raised.
	DefaultMaxTotalWait = 3 * time.Minute
)

// MaxDuration is the largest time.Duration.
const MaxDuration = time.Duration(1<<63 - 1)

// Policy is how a client retries: how many tries in all, the backoff whose
// jitter spreads retries out, the longest server delay it waits out, the
// longest it waits for one request in all, and the sources of randomness
// and waiting (replaced in tests).
type Policy struct {
	Attempts int
	Base     time.Duration
	Cap      time.Duration
	MaxWait  time.Duration
	Total    time.Duration
	Rand     func() float64
	Sleep    func(context.Context, time.Duration) error
}

// Defaults returns the default Policy: DefaultMaxAttempts tries, a backoff
// from DefaultBackoffBase to DefaultBackoffMax, server delays up to
// DefaultMaxWait, math/rand/v2's Float64 and a timer that stops when the
// context ends.
func Defaults() Policy {
	return Policy{
		Attempts: DefaultMaxAttempts,
		Base:     DefaultBackoffBase,
		Cap:      DefaultBackoffMax,
		MaxWait:  DefaultMaxWait,
		Total:    DefaultMaxTotalWait,
		Rand:     rand.Float64,
		Sleep:    sleep,
	}
}

// sleepKey is the context key of WithSleep's function.
type sleepKey struct{}

// WithSleep returns ctx with f in place of the default wait of the
// retries made under it, for the module's examples, whose self-tests run
// a real client against a server on a fake clock and cannot reach the
// client packages' unexported test options.
func WithSleep(ctx context.Context, f func(context.Context, time.Duration) error) context.Context {
	return context.WithValue(ctx, sleepKey{}, f)
}

// sleep is pipeline.Sleep, or the function WithSleep put in ctx.
func sleep(ctx context.Context, d time.Duration) error {
	if f, ok := ctx.Value(sleepKey{}).(func(context.Context, time.Duration) error); ok {
		return f(ctx, d)
	}
	return pipeline.Sleep(ctx, d)
}

// The setters below validate an option's arguments for the client
// packages' With… options, recording a problem in errs (whose Prefix names
// the package) instead of applying it.

// SetMaxAttempts is WithMaxAttempts(n).
func (p *Policy) SetMaxAttempts(errs *option.Errors, n int) {
	if errs.Require(n >= 1, "WithMaxAttempts(%d): want at least 1", n) {
		p.Attempts = n
	}
}

// SetBackoff is WithBackoff(base, max).
func (p *Policy) SetBackoff(errs *option.Errors, base, max time.Duration) {
	if errs.Require(0 <= base && base <= max, "WithBackoff(%v, %v): want 0 <= base <= max", base, max) {
		p.Base, p.Cap = base, max
	}
}

// SetMaxWait is WithMaxWait(each, total). Neither bound has a zero
// meaning "the default": the message says what the default is, for a
// caller who meant to keep it.
func (p *Policy) SetMaxWait(errs *option.Errors, each, total time.Duration) {
	ok := errs.Require(each > 0, "WithMaxWait(%v, %v): want each > 0 (the default is %v)", each, total, DefaultMaxWait)
	ok = errs.Require(total > 0, "WithMaxWait(%v, %v): want total > 0 (the default is %v)", each, total, DefaultMaxTotalWait) && ok
	if ok {
		p.MaxWait, p.Total = each, total
	}
}

// SetRand is WithRand(f).
func (p *Policy) SetRand(errs *option.Errors, f func() float64) {
	if errs.Require(f != nil, "WithRand(nil); leave the option out for math/rand/v2's Float64") {
		p.Rand = f
	}
}

// SetSleep is WithSleep(f).
func (p *Policy) SetSleep(errs *option.Errors, f func(context.Context, time.Duration) error) {
	if errs.Require(f != nil, "WithSleep(nil); leave the option out for a timer that stops when the context ends") {
		p.Sleep = f
	}
}

// Wait returns how long to wait before retry n (1, 2, …) of a request
// refused with the given hint (the server's delay; 0 for none), after the
// request's earlier retries waited spent in all, or false to give up: the
// hint is longer than MaxWait, takes the request's waits past Total, or
// reaches ctx's deadline. The wait is the hint plus a uniformly random
// duration in [0, min(Cap, Base·2^(n-1))], never taken past Total or the
// deadline by the jitter.
func (p *Policy) Wait(ctx context.Context, n int, hint, spent time.Duration) (time.Duration, bool) {
	left := p.Total - spent
	if hint > p.MaxWait || hint > left {
		return 0, false
	}
	backoff := min(p.Backoff(n), left-hint)
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if hint >= left {
			return 0, false
		}
		backoff = min(backoff, left-hint)
	}
	return AddSat(hint, p.Jitter(backoff)), true
}

// Backoff is the jitter's bound before retry n (1, 2, …): min(Cap,
// Base·2^(n-1)), computed without overflow.
func (p *Policy) Backoff(n int) time.Duration {
	if n >= 1 && n-1 < 62 && p.Base <= p.Cap>>(n-1) {
		return p.Base << (n - 1)
	}
	return p.Cap
}

// Jitter draws a duration in [0, backoff]. The product is checked in
// floating point before it is converted, so neither rounding near the
// largest Duration nor a Rand outside [0, 1) can turn it into an
// out-of-range conversion or a negative wait.
func (p *Policy) Jitter(backoff time.Duration) time.Duration {
	j := p.Rand() * float64(backoff)
	switch {
	case !(j > 0): // also NaN
		return 0
	case j >= float64(backoff):
		return backoff
	}
	return time.Duration(j)
}

// AddSat adds two non-negative durations, saturating at MaxDuration. With
// a very large MaxWait a server's delay may be close to it, and a plain sum
// would wrap negative: a timer that fires at once, a retry with no wait at
// all.
func AddSat(a, b time.Duration) time.Duration {
	if b > MaxDuration-a {
		return MaxDuration
	}
	return a + b
}
