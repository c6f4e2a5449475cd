package redisstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// quotaCounts counts what the local quota did, for Health and tests.
type quotaCounts struct {
	grants   atomic.Uint64 // grant round trips answered
	leased   atomic.Uint64 // decisions made from a lease
	returned atomic.Int64  // units given back
	returns  atomic.Uint64 // return round trips that gave them back
}

// allowQuota decides for key with the local quota: from the key's lease
// while it holds units, else, when the key is hot, with a new lease (one
// round trip, which the key's other callers wait for), else in one round
// trip as allow.
func (l *Limiter) allowQuota(ctx context.Context, p *policy, key string, cost int) (core.Decision, error) {
	if err := p.checkCost(cost); err != nil {
		return core.Decision{}, err
	}
	qs, lt := l.quota, p.lease
	seen, hot := false, false
	for {
		now := l.clock.Now()
		q := qs.get(key, now)
		if q == nil { // too many keys followed: this one is cold
			return l.allow(ctx, p, key, cost)
		}
		q.mu.Lock()
		if !seen {
			// Counted once per call: a call that waited for another's
			// grant is still the hot key's.
			hot, seen = q.see(now, lt.length, qs.hot), true
		}
		changed := q.pol != nil && !q.pol.same(p)
		if changed {
			// The key's limit is not the one of the last grant: the lease
			// ends before any unit of it is spent under this limit, and a
			// refusal under the other no longer holds.
			q.wait, q.full = 0, 0
		}
		if !changed && q.end > now && q.units >= int64(cost) {
			// The next lease is asked for once this one cannot pay a call:
			// asked sooner, it would replace this one, whose last units
			// would go back to Redis only after the grant had been sized
			// without them (an instant burst would lose them). A lease
			// granted ahead is spent from when its units are due.
			if now < q.start {
				d := q.refused(now, time.Duration(q.start-now))
				d.Leased = true
				l.quotaCount.leased.Add(1)
				q.mu.Unlock()
				return d, nil
			}
			q.units -= int64(cost)
			d := q.admitted(now)
			d.Leased = true
			l.quotaCount.leased.Add(1)
			l.askNext(p, key, q)
			q.mu.Unlock()
			return d, nil
		}
		// The lease, if any, is over for this call: its end has come, it
		// holds fewer units than the cost (they go back, and a new lease
		// of at least the cost is asked for), or the key's limit changed.
		back := q.take()
		switch {
		case now < q.wait || !hot && now < q.full:
			// A grant's refusal holds until then, and a full fixed
			// window's to its end for the calls of a key gone cold, as the
			// deny cache holds the exact path's.
			until := q.wait
			if !hot {
				until = max(q.wait, q.full)
			}
			d := q.refused(now, time.Duration(until-now))
			d.Leased = true
			if hot && now < q.wait {
				l.aheadAt(p, key, q, now)
			}
			q.mu.Unlock()
			l.giveBackHeld(key, back, p)
			return d, nil
		case !hot:
			q.mu.Unlock()
			l.giveBackHeld(key, back, p)
			return l.allow(ctx, p, key, cost)
		case q.asking != nil:
			ch := q.asking
			q.mu.Unlock()
			l.giveBackHeld(key, back, p)
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return core.Decision{}, &core.StoreError{Op: "grant", Err: ctx.Err()}
			}
		}
		ch := make(chan struct{})
		q.asking = ch
		code := l.aheadCode()
		n := q.size(lt.length, cost, p.limit.EffectiveBurst())
		if code == 'G' {
			n = q.aheadShare(n, cost, lt.length, p.limit)
		}
		q.mu.Unlock()
		l.giveBackHeld(key, back, p)
		return l.grant(ctx, p, key, cost, q, ch, n, now, code)
	}
}

// grant asks for a lease of n units for key, then decides for this call's
// cost from it. sent is when the call was sent, on the process's clock:
// the lease ends at most the quota's length after it.
func (l *Limiter) grant(ctx context.Context, p *policy, key string, cost int, q *quota, ch chan struct{}, n int, sent int64, code byte) (core.Decision, error) {
	v, err := l.lease(ctx, p, key, q, ch, n, sent, code)
	if err != nil {
		return l.allowLocal(ctx, key, cost, err)
	}
	k := v[5]
	switch {
	case k == 0:
		// Redis refused the grant: the decision is the store's.
		l.count.store.Add(1)
		l.aheadAt(p, key, q, sent)
		d := q.refused(sent, time.Duration(q.wait-sent))
		q.mu.Unlock()
		return d, nil
	case k < int64(cost):
		// Fewer units than the cost fit: a shared limiter refuses it too.
		// The units serve cheaper calls.
		l.count.store.Add(1)
		d := q.refused(sent, time.Duration(int64(cost)-k)*p.limit.Interval())
		q.mu.Unlock()
		return d, nil
	}
	// The call takes the lease's first units: a decision from the lease,
	// as the calls that spend the rest are; before they are due, it is
	// refused until then.
	if now := l.clock.Now(); now < q.start {
		d := q.refused(now, time.Duration(q.start-now))
		d.Leased = true
		l.quotaCount.leased.Add(1)
		q.mu.Unlock()
		return d, nil
	}
	q.units -= int64(cost)
	d := q.admitted(sent)
	d.Leased = true
	l.quotaCount.leased.Add(1)
	l.askNext(p, key, q)
	q.mu.Unlock()
	return d, nil
}

// refill asks for the next lease of n units for key, a Multi's ask in the
// background (multi_quota.go), made while the lease in force may still
// have units: the new lease replaces it, and its last units go back. A
// refill that fails changes nothing: a later call asks again, and meets
// the failure mode.
func (l *Limiter) refill(ctx context.Context, p *policy, key string, q *quota, ch chan struct{}, n int, sent int64) {
	if _, err := l.lease(ctx, p, key, q, ch, n, sent, 'g'); err == nil {
		q.mu.Unlock()
	}
}

// lease asks for a lease of n units for key (code: 'g', or 'G' for a grant
// ahead, see aheadCode) and ends q's ask (ch). On success it returns with
// q locked and the reply applied: a new lease in place of the one in force
// (whose units go back), or, when nothing fits, the instant before which
// the key is refused here: until the units asked for fit, at most a lease
// (see below).
func (l *Limiter) lease(ctx context.Context, p *policy, key string, q *quota, ch chan struct{}, n int, sent int64, code byte) (vals, error) {
	lt := p.lease
	v, err := l.call(ctx, lt.grant, "grant", code, key, n, "")
	q.mu.Lock()
	q.asking = nil
	close(ch)
	if err != nil {
		q.mu.Unlock()
		return v, err
	}
	l.quotaCount.grants.Add(1)
	q.holders = v[8]
	k := v[5]
	q.short = k == 0 || code == 'G' && v[2] > 0
	if k == 0 {
		// Nothing fits: ask again when the n units asked for will, as the
		// grantor's wait for one and the limit's interval for the others
		// say, at most a lease from now, since units other instances give
		// back come sooner (a fixed window's come all at once, when it
		// turns). n is at most half the burst shared among the
		// holders, so the instances that wait together leave the bucket
		// room: none of its refill is lost while they wait, and a key at
		// its limit costs a round trip per n units refilled, not per unit.
		wait := max(v[2], 0)
		if p.limit.Algorithm == core.FixedWindow {
			q.full = sent + wait // the window's end
		} else {
			wait += int64(n-1) * int64(p.limit.Interval())
		}
		q.wait = sent + min(wait, lt.length)
		q.remaining, q.reset, q.sent, q.limit, q.pol = v[1], v[3], sent, l.limitAt(p, v[4]), p
		return v, nil
	}
	if sent < q.full && 2*(v[1]+k) > int64(p.limit.EffectiveBurst()) {
		// The window was full here, and now more than half of it is free:
		// more than the leases out (each at most half the burst shared
		// among the holders) could have given back. Redis lost the
		// window's count (a restart): the units stay charged, unspent, and
		// the window stays refused here to its end, as exact mode's deny
		// cache keeps it.
		q.wait = q.full
		q.remaining, q.reset, q.sent, q.limit, q.pol = 0, v[3], sent, l.limitAt(p, v[4]), p
		v[5] = 0
		return v, nil
	}
	back := q.take()
	// A grant ahead's units are due in v[2], counted on the server's
	// clock from when the script ran: after the call was sent, before its
	// reply came. So they are spent from the reply plus that, and at most
	// a lease after the call's sending plus that: every unit is spent
	// after a shared limiter would have admitted it, and at most a lease
	// later (the bound, quota.go).
	due := int64(0)
	if code == 'G' {
		due = max(v[2], 0)
	}
	end := sent + due + lt.length
	if v[9] >= 0 {
		end = min(end, sent+v[9]) // a window's end, counted from before the call was sent
	}
	if due > 0 {
		q.start = l.clock.Now() + due
	}
	q.remaining, q.reset, q.sent, q.limit, q.pol = v[1], v[3], sent, l.limitAt(p, v[4]), p
	q.gs, q.gn = v[6], v[7]
	q.gen++
	q.units, q.end, q.granted = k, end, k
	gen := q.gen
	l.opts.after(time.Duration(end-sent), func() { l.expire(key, q, gen) })
	// Under q's lock: giveBackHeld only starts the round trip.
	l.giveBackHeld(key, back, p)
	return v, nil
}

// expire gives back what lease gen of q left unspent once it has ended,
// by the rule of the key's limit now (giveBackHeld).
func (l *Limiter) expire(key string, q *quota, gen uint64) {
	q.mu.Lock()
	if q.gen != gen || q.units == 0 || l.clock.Now() < q.end {
		q.mu.Unlock()
		return
	}
	back := q.take()
	q.mu.Unlock()
	l.giveBackHeld(key, back, l.quota.current(key, back.pol))
}

// admitted is a local admission at now: Remaining is the shared state's as
// the grant left it plus the units still held, ResetAfter the grant's less
// the time since.
func (q *quota) admitted(now int64) core.Decision {
	return core.Decision{
		Allowed:    true,
		Limit:      q.limit,
		Remaining:  int(q.remaining + q.units),
		ResetAfter: time.Duration(max(0, q.reset-(now-q.sent))),
	}
}

// refused is a local refusal at now, to be retried after wait.
func (q *quota) refused(now int64, wait time.Duration) core.Decision {
	return core.Decision{
		Limit:      q.limit,
		Remaining:  int(q.units),
		RetryAfter: max(wait, 1),
		ResetAfter: time.Duration(max(0, q.reset-(now-q.sent), int64(wait))),
	}
}
