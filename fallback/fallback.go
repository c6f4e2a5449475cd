package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// Limiter asks a primary limiter and, while the primary fails, decides with
// a local one, behind a circuit breaker so that no request waits on a
// primary that is down. The package documentation describes the states and
// what the fleet admits while degraded.
//
// A Limiter is safe for concurrent use. Make one with [New].
type Limiter struct {
	primary core.Limiter
	local   core.Limiter
	timeout time.Duration
	b       *breaker.Breaker
	observe func(Event)

	// Every decision writes one of these: each on its own cache line, so
	// that counting does not evict the fields above, which every request
	// reads, from other cores.
	_        [64]byte
	primaryN atomic.Uint64
	_        [56]byte
	localN   atomic.Uint64
	_        [56]byte
}

var _ core.Limiter = (*Limiter)(nil)

// New returns a Limiter that asks primary and falls back to local. It fails,
// with a message saying what to fix, if either limiter is nil or an option
// is invalid.
func New(primary, local core.Limiter, opts ...Option) (*Limiter, error) {
	if primary == nil {
		return nil, errors.New("fallback: primary limiter is nil; pass the limiter to protect, e.g. a Redis-backed one")
	}
	if local == nil {
		return nil, errors.New("fallback: local limiter is nil; pass an in-memory one, e.g. core.New(limit)")
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	cfg := breaker.Config{Rule: o.rule, Clock: o.clock}
	if f := o.observe; f != nil {
		cfg.OnFailure = func(err error) { f(Event{Kind: EventPrimaryFailed, Err: err}) }
		cfg.OnStateChange = func(from, to breaker.State) {
			f(Event{Kind: EventStateChanged, From: from, To: to})
		}
	}
	b, err := breaker.New(cfg)
	if err != nil { // buildOptions has checked every field
		return nil, fmt.Errorf("fallback: %w", err)
	}
	return &Limiter{primary: primary, local: local, timeout: o.timeout, b: b, observe: o.observe}, nil
}

// MustNew is like [New] but panics on error. It is meant for package-level
// variables.
func MustNew(primary, local core.Limiter, opts ...Option) *Limiter {
	l, err := New(primary, local, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

// Allow decides with the primary while the breaker is closed, and with the
// local limiter when the primary fails (a store error or the timeout) or
// the breaker is open; the caller gets a decision either way. The primary's
// other errors, such as an invalid cost, are returned unchanged, and so is
// any error once the caller's own context has ended; neither counts as a
// failure.
func (l *Limiter) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	if !l.b.Closed() {
		if !l.b.TryProbe() {
			return l.allowLocal(ctx, key, cost)
		}
		return l.probe(ctx, key, cost)
	}
	return l.allowPrimary(ctx, key, cost, false)
}

// probe is Allow for the caller that owns the probe.
func (l *Limiter) probe(ctx context.Context, key string, cost int) (core.Decision, error) {
	// A primary (or observer) that panics must not keep the probe, or no
	// request would ever probe again and the breaker would stay open for
	// good.
	done := false
	defer func() {
		if !done {
			l.b.Inconclusive(true)
		}
	}()
	d, err := l.allowPrimary(ctx, key, cost, true)
	done = true
	return d, err
}

func (l *Limiter) allowPrimary(ctx context.Context, key string, cost int, probe bool) (core.Decision, error) {
	cctx, cancel := breaker.Bound(ctx, l.timeout)
	d, err := l.primary.Allow(cctx, key, cost)
	if err == nil {
		if cancel != nil {
			cancel()
		}
		l.b.Success(probe)
		l.primaryN.Add(1)
		l.decided(Primary)
		return d, nil
	}
	if !l.failure(ctx, cctx, cancel, err, probe) {
		return d, err
	}
	return l.allowLocal(ctx, key, cost)
}

func (l *Limiter) allowLocal(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := l.local.Allow(ctx, key, cost)
	if err == nil {
		l.localN.Add(1)
		l.decided(Local)
	}
	return d, err
}

// Refund gives cost back to the limiter that decides now: the primary while
// the breaker is closed, the local limiter when it is not or when the
// primary's refund fails (which counts as a failure). A charge is refunded
// only if it was made on the side that gets the refund: units the primary
// charged are not given back to it if the breaker opened in between (the
// local limiter gets them instead, up to its full quota), and units the
// local limiter charged are given to the primary if it closed in between.
func (l *Limiter) Refund(ctx context.Context, key string, cost int) error {
	if !l.b.Closed() {
		return l.local.Refund(ctx, key, cost)
	}
	cctx, cancel := breaker.Bound(ctx, l.timeout)
	err := l.primary.Refund(cctx, key, cost)
	if err == nil {
		if cancel != nil {
			cancel()
		}
		l.b.Success(false)
		return nil
	}
	if !l.failure(ctx, cctx, cancel, err, false) {
		return err
	}
	return l.local.Refund(ctx, key, cost)
}

// State reports the breaker's state. An open breaker whose period has
// ended reports HalfOpen, although the observer hears of the change only
// when the next request takes the probe.
func (l *Limiter) State() State { return l.b.State() }

// Stats returns the counters of what l did since it was made.
func (l *Limiter) Stats() Stats {
	return Stats{
		PrimaryDecisions: l.primaryN.Load(),
		LocalDecisions:   l.localN.Load(),
		PrimaryFailures:  l.b.Failures(),
		Opens:            l.b.Opens(),
	}
}

// failure reports whether err, returned by the primary under cctx, is a
// primary failure to answer locally, and tells the breaker. It ends cctx.
func (l *Limiter) failure(ctx, cctx context.Context, cancel context.CancelFunc, err error, probe bool) bool {
	// Read before cancel, which would end cctx in any case.
	timedOut := cancel != nil && cctx.Err() != nil
	if cancel != nil {
		cancel()
	}
	if ctx.Err() != nil || !timedOut && !errors.Is(err, core.ErrStore) {
		l.b.Inconclusive(probe)
		return false
	}
	l.b.Failure(err, probe)
	return true
}

func (l *Limiter) decided(s Side) {
	if l.observe != nil {
		l.observe(Event{Kind: EventDecided, Side: s})
	}
}
