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

// Release gives the lease's slot back, the first time it is called; later
// calls do nothing and return nil. The error is the store's, if giving the
// slot back failed (a lease in a shared store then ends when it expires).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || !l.done.CompareAndSwap(false, true) {
		return nil
	}
	if l.keyed != nil {
		l.keyed.giveBack(l)
		return nil
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
