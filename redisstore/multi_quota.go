package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
)

// A Multi made WithLocalQuota decides a call in memory when every item's
// key holds a lease with enough units: it takes the cost from each and
// sends nothing. Otherwise the items that hold enough take their units,
// and the others go to Redis in one call (as any Multi's), all or nothing:
// if Redis admits them, the units taken are spent; if it refuses, they go
// back to their leases. The hot keys without a lease ask one in the
// background, for the calls after. The leases are those of a Limiter (one
// limit) or a Stack (several) made with the item's limits and the Multi's
// options, one per distinct limits, kept by the Multi (multi_leasers.go):
// the same grants, lease lengths, returns and state (quota.go), so the
// bound of WithLocalQuota holds as stated there: every unit spent in
// memory was charged before, at most Length earlier, and a spent unit is
// never given back; what Redis decides, it charges. An item whose limits
// cannot be leased (an algorithm WithLocalQuota does not take) is always
// decided in Redis.

// multiQuota is a Multi's local quota.
type multiQuota struct {
	client redis.UniversalClient
	opts   []Option // the Multi's, for its leasers

	mu sync.RWMutex
	by map[string]*Limiter // an item's limits (their key ends, joined) → its leaser; nil: cannot be leased
	// known are the limits of up to 4 layers seen before, as given, with
	// their leaser: a call's items find theirs without the layers'
	// lookups, whose hashing of a limit costs more than the decision.
	known map[knownLimits]known

	leased atomic.Uint64  // calls decided from leases
	asking sync.WaitGroup // grants under way
}

// taken is a cost taken from a lease in force, until the call's answer.
type taken struct {
	l      *Limiter
	q      *quota
	key    string
	gen    uint64
	cost   int64
	gs, gn int64 // the lease's grant instant, which a fixed window's return names
}

// ask is a lease to ask for once the call is decided.
type ask struct {
	l   *Limiter
	q   *quota
	key string
	ch  chan struct{}
	n   int
}

// allowQuota is Allow on a Multi made WithLocalQuota: the items whose
// key holds enough units take them; when every item did, the call is
// decided. When some key's last grant found nothing (it waits), the call
// is refused here if every other item took its units. Otherwise the items
// that took nothing go to Redis, in one call, all or nothing: what the
// others took is spent if Redis admits them, and goes back to the leases
// if it refuses. So a key whose units sit in this instance's lease is not
// refused by Redis for lack of them.
func (m *Multi) allowQuota(ctx context.Context, items []Item) ([]core.Decision, error) {
	now := m.l.clock.Now()
	ds := make([]core.Decision, len(items))
	var tbuf [8]taken
	var abuf [4]ask
	var rbuf [8]int
	tk, asks, rest := tbuf[:0], abuf[:0], rbuf[:0] // rest: the items Redis decides
	refused := false                               // an item refused here
	for i, it := range items {
		l := m.leasable(it)
		if l == nil {
			rest = append(rest, i)
			continue
		}
		p, qs := l.pol, l.quota
		q := qs.get(it.Key, now)
		if q == nil { // too many keys followed: this one is cold
			rest = append(rest, i)
			continue
		}
		cost := int64(it.Cost)
		q.mu.Lock()
		hot := q.see(now, p.lease.length, qs.hot)
		switch {
		case q.end > now && q.units >= cost:
			q.units -= cost
			tk = append(tk, taken{l: l, q: q, key: it.Key, gen: q.gen, cost: cost, gs: q.gs, gn: q.gn})
			ds[i] = q.admitted(now)
			ds[i].Leased = true
			if q.units*4 < q.granted && q.asking == nil && now >= q.wait {
				// Below a quarter: the next lease is asked for now.
				asks = append(asks, m.ask(l, q, it.Key, it.Cost))
			}
		case hot && now < q.wait:
			// The key's last grant found nothing: refused here until then,
			// unless the call goes to Redis for another item.
			ds[i] = q.refused(now, time.Duration(q.wait-now))
			ds[i].Leased = true
			refused = true
			rest = append(rest, i)
		default:
			rest = append(rest, i)
			if hot && q.asking == nil && now >= q.wait {
				asks = append(asks, m.ask(l, q, it.Key, it.Cost))
			}
		}
		q.mu.Unlock()
	}
	if refused && allRefused(ds, rest) {
		// Every item not taken is refused here: so is the call.
		putBack(tk)
		m.grantLater(ctx, asks, now)
		m.quota.leased.Add(1)
		return ds, nil
	}
	m.grantLater(ctx, asks, now)
	if len(rest) == 0 {
		m.quota.leased.Add(1)
		return ds, nil
	}
	sub := items
	if len(rest) < len(items) {
		sub = make([]Item, len(rest))
		for j, i := range rest {
			sub[j] = items[i]
		}
	}
	c, err := m.prepare(ctx, sub)
	var rd []core.Decision
	if err == nil {
		rd, err = m.allow(ctx, c, sub)
	}
	all := err == nil
	for j, i := range rest {
		if err == nil {
			ds[i] = rd[j]
			all = all && rd[j].Allowed
		}
	}
	if !all {
		putBack(tk)
	}
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// allRefused reports whether every item of rest is refused in ds.
func allRefused(ds []core.Decision, rest []int) bool {
	for _, i := range rest {
		if !ds[i].Leased {
			return false
		}
	}
	return true
}

// putBack gives every cost of tk back (taken.putBack).
func putBack(tk []taken) {
	for _, t := range tk {
		t.putBack()
	}
}

// ask starts q's ask for a lease of at least cost (q is locked).
func (m *Multi) ask(l *Limiter, q *quota, key string, cost int) ask {
	ch := make(chan struct{})
	q.asking = ch
	return ask{l: l, q: q, key: key, ch: ch, n: q.size(l.pol.lease.length, cost, l.pol.limit.EffectiveBurst())}
}

// grantLater asks for the leases of asks in the background: the call that
// found them needed is decided without them. sent is before the asks were
// made, so a lease ends no later than its length after it was sent.
func (m *Multi) grantLater(ctx context.Context, asks []ask, sent int64) {
	if len(asks) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, a := range asks {
		m.quota.asking.Go(func() { a.l.refill(ctx, a.l.pol, a.key, a.q, a.ch, a.n, sent) })
	}
}

// putBack returns t's cost to its lease while that is the one it was taken
// from and still in force; else to the shared state, as a lease's unspent
// units go back when it ends (under its grant's instant: a fixed window's
// units reach the window they were taken from only).
func (t taken) putBack() {
	q := t.q
	q.mu.Lock()
	// Now, not the call's start: the call may have waited for Redis past
	// the lease's end, and the lease's expiry may have given back the rest.
	if q.gen == t.gen && q.end > t.l.clock.Now() {
		q.units += t.cost
		q.mu.Unlock()
		return
	}
	q.mu.Unlock()
	t.l.giveBackHeld(t.key, held{pol: t.l.pol, units: t.cost, gs: t.gs, gn: t.gn}, t.l.pol)
}

// quotaHealth adds the leases' counters to h.
func (m *Multi) quotaHealth(h core.Health) core.Health {
	mq := m.quota
	h.LeaseDecisions = mq.leased.Load()
	mq.mu.RLock()
	defer mq.mu.RUnlock()
	for _, l := range mq.by {
		if l != nil {
			h.Leases += l.quotaCount.grants.Load()
			h.Returned += uint64(l.quotaCount.returned.Load())
			h.Returns += l.quotaCount.returns.Load()
		}
	}
	return h
}
