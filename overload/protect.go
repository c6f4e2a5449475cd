package overload

import (
	"context"
	"errors"

	"github.com/floodgate/floodgate/core"
)

// Protect returns a core.Limiter that asks rate, a client's quota, first,
// and then guard, an overload guard (a limit of the whole service, such as
// a concurrency limit), so that one adapter does both:
//
//   - a request rate refuses is answered with rate's refusal: the guard is
//     not asked, and holds nothing for it;
//   - a request the guard refuses (a shed) gets the guard's refusal, and
//     what rate charged it goes back (its Refund, or its lease released):
//     a shed request is not charged to the client's quota;
//   - an admitted request gets rate's decision (the client's quota, for
//     the rate-limit headers), holding the guard's lease, and rate's too
//     when it has one: ending the request ends both, as the adapters do.
//
// A shaped admission of rate (a Delay) holds the guard's slot while it
// waits. Refund gives back to rate only: a guard's slots are given back by
// their leases. The limiter lists rate's policies (core.PolicyLister)
// when rate does. It panics if rate or guard is nil: it is meant for
// set-up code.
func Protect(rate, guard core.Limiter) core.Limiter {
	if rate == nil || guard == nil {
		panic(errors.New("overload: Protect needs a rate limiter and a guard, both not nil"))
	}
	p := protected{rate: rate, guard: guard}
	if pl, ok := rate.(core.PolicyLister); ok {
		return protectedLister{p, pl}
	}
	return p
}

// protected is Protect's limiter.
type protected struct {
	rate, guard core.Limiter
}

// Allow asks rate, then guard, as Protect says.
func (p protected) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := p.rate.Allow(ctx, key, cost)
	if err != nil || !d.Allowed {
		return d, err
	}
	g, err := p.guard.Allow(ctx, key, cost)
	if err != nil || !g.Allowed {
		// Shed, or the guard failed: what rate charged goes back, under a
		// context that is not cancelled (the request's may be done).
		back := context.WithoutCancel(ctx)
		var rerr error
		if !d.Lease.IsZero() {
			rerr = d.Lease.End(back, core.EndIgnored)
		} else {
			rerr = p.rate.Refund(back, key, cost)
		}
		if err != nil {
			return g, errors.Join(err, rerr)
		}
		return g, nil
	}
	switch {
	case g.Lease.IsZero():
	case d.Lease.IsZero():
		d.Lease = g.Lease
	default:
		d.Lease = both(d.Lease, g.Lease)
	}
	return d, nil
}

// Refund gives cost back to rate.
func (p protected) Refund(ctx context.Context, key string, cost int) error {
	return p.rate.Refund(ctx, key, cost)
}

// both is a lease that ends a and b alike.
func both(a, b core.Lease) core.Lease {
	return core.NewLease(func(ctx context.Context, e core.Ending) error {
		return errors.Join(a.End(ctx, e), b.End(ctx, e))
	})
}

// protectedLister is protected for a rate that lists its policies.
type protectedLister struct {
	protected
	pl core.PolicyLister
}

// Policies lists rate's policies.
func (p protectedLister) Policies() []core.Limit { return p.pl.Policies() }
