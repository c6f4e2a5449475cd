package core

import (
	"context"
	"sync/atomic"
)

// Lease is what a request admitted under a concurrency limit holds while it
// runs: Release gives its slot back. The adapters release when the request
// ends, however it ends (a response, a panic, a cancelled client, the end of
// a stream). Release is idempotent: called again, or concurrently, it
// releases once. A nil *Lease is valid and releases nothing, so callers can
// release every Decision's Lease unconditionally.
type Lease struct {
	done    atomic.Bool
	release func(context.Context) error
	// end is NewEndingLease's: a release told how the request ended.
	end func(context.Context, Ending) error

	// An in-memory limiter's lease gives its units back with no closure,
	// so that an admission allocates the Lease alone: keyed's state for
	// key hash h, generation gen (or its overflow state) gets units back.
	keyed    *Keyed
	h        uint64
	gen      int64
	units    int64
	overflow bool
}

// NewLease returns a Lease whose first Release calls release. Limiters that
// count requests in flight return one in Decision.Lease.
func NewLease(release func(ctx context.Context) error) *Lease {
	return &Lease{release: release}
}

// NewEndingLease returns a Lease whose first Release or End calls end with
// how the request ended (EndDone for Release). Limiters that learn from
// their requests' latencies and failures (overload's adaptive limits)
// return one.
func NewEndingLease(end func(ctx context.Context, e Ending) error) *Lease {
	return &Lease{end: end}
}

// Ending is how a request held under a Lease ended, for the limits that
// learn from it (an adaptive concurrency limit counts the latency of
// requests served, and a drop as a sign of overload). The adapters say it
// when they end a request ([Lease.End]); other limiters ignore it.
type Ending uint8

const (
	// EndDone: the request was served (successfully or not, as the
	// application sees it); its latency measures the service.
	EndDone Ending = iota
	// EndDropped: the request failed for want of capacity: it timed out,
	// or what it called shed it. A sign of overload, whatever its latency.
	EndDropped
	// EndIgnored: the request ended for a reason that says nothing of the
	// service's capacity (it was refused before any work, or its charge
	// given back); its latency is not counted. The adapters do not end a
	// request whose client went away so: its latency is a lower bound of
	// the service's, and the only sign of a slow service when the server
	// sets no deadlines.
	EndIgnored
)

// Release gives the lease's slot back, the first time it is called; later
// calls do nothing and return nil. The error is the store's, if giving the
// slot back failed (a lease in a shared store then ends when it expires).
// It is End with EndDone.
func (l *Lease) Release(ctx context.Context) error { return l.End(ctx, EndDone) }

// End is Release, saying how the request ended (see [Ending]); the first
// call of either releases, later ones do nothing and return nil.
func (l *Lease) End(ctx context.Context, e Ending) error {
	if l == nil || !l.done.CompareAndSwap(false, true) {
		return nil
	}
	switch {
	case l.keyed != nil:
		l.keyed.giveBack(l)
		return nil
	case l.end != nil:
		return l.end(ctx, e)
	}
	return l.release(ctx)
}

// Released reports whether Release has been called.
func (l *Lease) Released() bool { return l != nil && l.done.Load() }

// PolicyLister is implemented by limiters that enforce several limits on
// every request (a stack of limits): Policies returns them all, in order,
// so that adapters can list every one in RateLimit-Policy while
// Decision.Limit names the one that decided. The slice is shared and must
// not be modified.
type PolicyLister interface {
	Policies() []Limit
}
