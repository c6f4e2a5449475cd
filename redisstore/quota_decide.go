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
			q.wait = 0
		}
		if !changed && q.end > now && q.units >= int64(cost) {
			q.units -= int64(cost)
			d := q.admitted(now)
			d.Leased = true
			l.quotaCount.leased.Add(1)
			if q.units*4 >= q.granted || q.asking != nil || now < q.wait {
				q.mu.Unlock()
				return d, nil
			}
			// Below a quarter: this call asks for the next lease.
			ch := make(chan struct{})
			q.asking = ch
			n := q.size(lt.length, cost, p.limit.EffectiveBurst())
			q.mu.Unlock()
			l.refill(ctx, p, key, q, ch, n, now)
			return d, nil
		}
		// The lease, if any, is over for this call: its end has come, it
		// holds fewer units than the cost (they go back, and a new lease
		// of at least the cost is asked for), or the key's limit changed.
		back := q.take()
		switch {
		case !hot:
			q.mu.Unlock()
			l.giveBackHeld(key, back, p)
			return l.allow(ctx, p, key, cost)
		case now < q.wait:
			d := q.refused(now, time.Duration(q.wait-now))
			d.Leased = true
			q.mu.Unlock()
			l.giveBackHeld(key, back, p)
			return d, nil
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
		n := q.size(lt.length, cost, p.limit.EffectiveBurst())
		q.mu.Unlock()
		l.giveBackHeld(key, back, p)
		return l.grant(ctx, p, key, cost, q, ch, n, now)
	}
}

// grant asks for a lease of n units for key, then decides for this call's
// cost from it. sent is when the call was sent, on the process's clock:
// the lease ends at most the quota's length after it.
func (l *Limiter) grant(ctx context.Context, p *policy, key string, cost int, q *quota, ch chan struct{}, n int, sent int64) (core.Decision, error) {
	v, err := l.lease(ctx, p, key, q, ch, n, sent)
	if err != nil {
		return l.allowLocal(ctx, key, cost, err)
	}
	k := v[5]
	switch {
	case k == 0:
		d := q.refused(sent, time.Duration(q.wait-sent))
		q.mu.Unlock()
		return d, nil
	case k < int64(cost):
		// Fewer units than the cost fit: a shared limiter refuses it too.
		// The units serve cheaper calls.
		d := q.refused(sent, time.Duration(int64(cost)-k)*p.limit.Interval())
		q.mu.Unlock()
		return d, nil
	}
	q.units -= int64(cost)
	d := q.admitted(sent)
	q.mu.Unlock()
	return d, nil
}

// refill asks for the next lease of n units for key while the one in force
// still has some: the call that took it below a quarter of its size makes
// the round trip, and the key's other calls spend what is left meanwhile.
// The new lease replaces the old, whose last units go back. A refill that
// fails changes nothing: the call that finds the lease spent asks again,
// and meets the failure mode.
func (l *Limiter) refill(ctx context.Context, p *policy, key string, q *quota, ch chan struct{}, n int, sent int64) {
	if _, err := l.lease(ctx, p, key, q, ch, n, sent); err == nil {
		q.mu.Unlock()
	}
}

// lease asks for a lease of n units for key and ends q's ask (ch). On
// success it returns with q locked and the reply applied: a new lease in
// place of the one in force (whose units go back), or, when nothing fits,
// the instant before which the key is refused here: the grantor's wait,
// but at least a quarter of a lease, so that an exhausted key costs a
// round trip per quarter lease at most, and at most a lease, since units
// that other instances give back come sooner than the grantor's wait.
func (l *Limiter) lease(ctx context.Context, p *policy, key string, q *quota, ch chan struct{}, n int, sent int64) (vals, error) {
	lt := p.lease
	v, err := l.call(ctx, lt.grant, "grant", 'g', key, n, "")
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
	if k == 0 {
		q.wait = sent + min(max(v[2], lt.length/4), lt.length)
		q.remaining, q.reset, q.sent, q.limit, q.pol = v[1], v[3], sent, l.limitAt(p, v[4]), p
		return v, nil
	}
	if k*4 < int64(n) {
		// A quarter of the ask or less: the key is at its limit, and what
		// refills goes to whoever asks first. Asking again at once would
		// cost a round trip per few units; the units wait in Redis (up to
		// the burst) for the next ask, a quarter of a lease from now.
		q.wait = sent + lt.length/4
	}
	back := q.take()
	end := sent + lt.length
	if v[9] >= 0 {
		end = min(end, sent+v[9]) // a window's end, counted from before the call was sent
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
