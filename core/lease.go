package core

import (
	"context"
	"sync/atomic"
)

// Lease is what a request admitted under a limit of requests in flight
// (the Concurrency algorithm, overload's limits) holds while it runs: End
// gives its slots back and says how the request ended. The adapters end it
// when the request ends, however it ends (a response, a panic, a cancelled
// client, the end of a stream).
//
// A Lease is a value: a [Holder] (the limiter's record of the admission)
// and a generation, so that handing one out allocates nothing. Only the
// first End or Release of a Lease, or of any copy of it, ends the
// admission; later and concurrent calls do nothing and return nil, even
// once the holder serves another admission. The zero Lease holds nothing
// and ending it does nothing, so callers can end every Decision's Lease
// unconditionally; IsZero tells a decision that carries one.
type Lease struct {
	h   Holder
	gen uint64
}

// Holder keeps the admissions a limiter hands out as Leases, each under a
// generation. Limiters that count requests in flight implement it, with
// [LeaseOf], to admit with no allocation by recycling their records.
type Holder interface {
	// EndLease ends the admission of generation gen, saying how its
	// request ended, if gen is still current, and makes it stale first,
	// atomically: a second End of the same Lease, or a copy's, then finds
	// gen stale and must do nothing and return nil, even once the record
	// serves another admission under a later generation. ctx is the
	// request's, often done already (the request ended, or its client
	// went away): a holder that gives slots back over I/O must not let
	// that stop it (context.WithoutCancel).
	EndLease(ctx context.Context, gen uint64, e Ending) error
}

// LeaseOf returns the Lease of h's admission of generation gen.
func LeaseOf(h Holder, gen uint64) Lease { return Lease{h: h, gen: gen} }

// funcHolder is the Holder of NewLease: one admission, ended once.
type funcHolder struct {
	done atomic.Bool
	end  func(context.Context, Ending) error
}

func (f *funcHolder) EndLease(ctx context.Context, _ uint64, e Ending) error {
	if !f.done.CompareAndSwap(false, true) {
		return nil
	}
	return f.end(context.WithoutCancel(ctx), e)
}

// NewLease returns a Lease whose first Release or End calls end with how
// the request ended (EndDone for Release; limits that do not learn from
// their requests ignore it), under a context that is never cancelled. It
// allocates: a limiter that must not implements [Holder].
func NewLease(end func(ctx context.Context, e Ending) error) Lease {
	return Lease{h: &funcHolder{end: end}}
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

// Release gives the lease's slots back, the first time it or End is
// called on the Lease or a copy; later calls do nothing and return nil. The
// error is the store's, if giving the slots back failed (a lease in a
// shared store then ends when it expires). It is End with EndDone.
func (l Lease) Release(ctx context.Context) error { return l.End(ctx, EndDone) }

// End is Release, saying how the request ended (see [Ending]).
func (l Lease) End(ctx context.Context, e Ending) error {
	if l.h == nil {
		return nil
	}
	return l.h.EndLease(ctx, l.gen, e)
}

// IsZero reports whether l is the zero Lease: the decision holds no slot
// (it was refused, or its limit does not count requests in flight).
func (l Lease) IsZero() bool { return l.h == nil }

// PolicyLister is implemented by limiters that enforce several limits on
// every request (a stack of limits): Policies returns them all, in order,
// so that adapters can list every one in RateLimit-Policy while
// Decision.Limit names the one that decided. The slice is shared and must
// not be modified.
type PolicyLister interface {
	Policies() []Limit
}
