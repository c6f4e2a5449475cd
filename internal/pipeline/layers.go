package pipeline

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
)

// Undo gives back what an admission took, for work that will not be done:
// the slot of its lease when it holds one (a concurrency limit counts
// requests, not units; the lease is told the request was ignored), otherwise cost units of key through lim.Refund. It
// runs under a context that is not cancelled, since the request's may be
// done already and a store that honours contexts would then refuse.
func Undo(ctx context.Context, lim core.Limiter, key string, cost int, lease core.Lease) error {
	ctx = context.WithoutCancel(ctx)
	if !lease.IsZero() {
		// Ignored: the work was not done, so its latency says nothing of
		// the service to a limit that learns from it.
		return lease.End(ctx, core.EndIgnored)
	}
	return lim.Refund(ctx, key, cost)
}

// End finishes an admitted request: it releases the lease of its decision,
// if any, with the request's context, done or not (a Lease's holder does
// not let a cancelled context stop a release: see core.Holder; wrapping
// it here cost an allocation a request). Adapters defer it around
// the handler, so that it runs however the handler ends (a return, a
// panic, which then goes on, or a client that went away). A zero lease
// costs a comparison. How the request ended, for the limits that learn
// from it, is read from ctx: EndDropped past its deadline (the work took
// longer than the caller could wait), EndDone otherwise, a client that
// went away included. Its latency then is a lower bound of the service's,
// and on a server without deadlines the clients giving up is the only
// sign that the service is slow: a guard that ignored those requests
// would learn from the ones fast enough to be waited for alone.
func End(ctx context.Context, lease core.Lease) {
	if !lease.IsZero() {
		EndAs(ctx, lease, Ending(ctx.Err()))
	}
}

// EndAs is End with the ending given: grpcmw reads it from the handler's
// status as well (Ending).
func EndAs(ctx context.Context, lease core.Lease, e core.Ending) {
	_ = lease.End(ctx, e)
}

// Ending is how a request whose context ended with err (nil: it has not)
// ended, as End says.
func Ending(err error) core.Ending {
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return core.EndDropped
	}
	return core.EndDone
}

// charge records what one floodgate charged a request, in the request's
// context, so that a floodgate nested inside it (a stricter limiter on one
// route, a second interceptor) can give it back when it refuses the
// request: a client refused on /login then keeps its global quota. The
// record is itself the context: one allocation per request.
type charge struct {
	context.Context
	lim   core.Limiter
	key   string
	cost  int
	lease core.Lease
	done  atomic.Bool
}

type chargeKey struct{}

// Value returns the record for chargeKey and asks the parent otherwise.
func (c *charge) Value(k any) any {
	if k == (chargeKey{}) {
		return c
	}
	return c.Context.Value(k)
}

// Attach returns ctx with a record of what res charged, for the floodgates
// that run inside this one; ctx itself when res charged nothing (skipped,
// free, failed open). lim is the limiter Run was given (res.Limiter, when
// set, takes its place).
func Attach(ctx context.Context, lim core.Limiter, res *Result) context.Context {
	if res.Skipped || res.FailedOpen || !res.Decision.Allowed {
		return ctx
	}
	if res.Limiter != nil {
		lim = res.Limiter
	}
	return &charge{Context: ctx, lim: lim, key: res.Key, cost: res.Cost, lease: res.Decision.Lease}
}

// undoOuter gives back every charge recorded in ctx, each at most once.
// Errors are dropped: a refund that fails leaves the outer charge in place,
// which is what happens without records.
func undoOuter(ctx context.Context) {
	c, _ := ctx.Value(chargeKey{}).(*charge)
	for c != nil {
		if c.done.CompareAndSwap(false, true) {
			_ = Undo(c.Context, c.lim, c.key, c.cost, c.lease)
		}
		c, _ = c.Context.Value(chargeKey{}).(*charge)
	}
}
