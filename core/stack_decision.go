package core

import (
	"context"
	"errors"
	"time"
)

// lease returns the Lease of an admission: the units the stack's
// concurrency layers gave it, each layer's given back once, as a Keyed's
// lease gives them back (to the state of the generation it charged, or to
// the overflow state).
func (s *Stack) lease(ls []layerState, h uint64, cost int64) Lease {
	var one Lease
	var all []Lease
	for j, k := range s.layers {
		if !k.leases {
			continue
		}
		l := k.hold(h, ls[j].ns.b, cost, ls[j].overflow)
		if one.IsZero() {
			one = l
		}
		all = append(all, l)
	}
	if len(all) == 1 {
		return one
	}
	return NewLease(func(ctx context.Context, _ Ending) error {
		var errs []error
		for _, l := range all {
			if err := l.Release(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

// decision combines the layers' verdicts (see [Stack]) and returns the
// index of the layer it names. A layer that would have admitted a request
// the stack denies is not charged, and its verdict (which describes the
// charge) is not used.
func (s *Stack) decision(ls []layerState, allowed bool) (Decision, int) {
	pick := 0
	d := Decision{Allowed: allowed}
	for j := range ls {
		v, best := ls[j].v, ls[pick].v
		if allowed {
			if v.remaining < best.remaining {
				pick = j
			}
			d.Delay = max(d.Delay, time.Duration(v.retryAfter))
		} else if !v.allowed && (best.allowed || v.retryAfter > best.retryAfter) {
			pick = j
		}
		d.Overflow = d.Overflow || ls[j].overflow
	}
	v := ls[pick].v
	d.Limit = s.limits[pick]
	d.Remaining = int(v.remaining)
	d.ResetAfter = time.Duration(v.resetAfter)
	if !allowed {
		d.RetryAfter = time.Duration(v.retryAfter)
		// A layer that admits has at least the cost left, more than any
		// layer that denies: the least left is a denying layer's.
		for j := range ls {
			if !ls[j].v.allowed {
				d.Remaining = min(d.Remaining, int(ls[j].v.remaining))
			}
		}
	}
	return d, pick
}
