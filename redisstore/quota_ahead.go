package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Asking ahead: a hot key's next lease is asked for before a call needs
// it, and, at the key's limit, for units not yet due (a grant ahead,
// lua/quota.lua), which the lease spends once due; each holder then asks
// for its share only. See docs/redis.md, "Grants ahead" and "Fair shares".

// leaseLength is the length of leases under l (a stack's: the layer of
// the shortest period) when LocalQuota.Length is set: set, or a tenth of
// l's period, at most 1 s; at least 1 ms.
func leaseLength(set time.Duration, l core.Limit) time.Duration {
	if set == 0 {
		set = min(l.Period/10, time.Second)
	}
	return max(set, time.Millisecond)
}

// aheadLead is the lead (lua/common.lua) of a GCRA leased with local
// quota, whose span is span: a grant ahead (lua/quota.lua) takes the
// theoretical arrival up to half a lease past the span, and a lead any
// shorter would read it back cut, its units spent twice.
func aheadLead(span time.Duration, c LocalQuota, l core.Limit) string {
	return strconv.FormatInt(int64(span+leaseLength(c.Length, l)), 10)
}

// aheadShare is n, a grant ahead's ask (q is locked), at most the
// holders' even share of what refills in half a lease (the reach of a
// grant ahead) when others hold the key too and the last grant found no
// unit fit now (the key is at its limit), and at least cost: the
// instances whose grants find nothing fits now then take units due in
// turn, each its share, in the order they ask, rather than the first to
// ask taking what the others wait for.
func (q *quota) aheadShare(n, cost int, length int64, l core.Limit) int {
	if q.holders <= 1 || !q.short {
		return n // alone, or the key's state had units to spare
	}
	share := int(float64(length/2) / float64(l.Interval()) / float64(q.holders))
	return max(cost, min(n, max(share, 1)))
}

// aheadCode is the operation of a call's grant: a grant ahead ('G',
// lua/quota.lua) for one GCRA or token bucket, whose units due within
// half a lease it may charge; else a grant of what fits now.
func (l *Limiter) aheadCode() byte {
	if l.layers == nil && (l.alg == core.GCRA || l.alg == core.TokenBucket) {
		return 'G'
	}
	return 'g'
}

// askNext asks for key's next lease in the background (q is locked) when
// a call has spent the last unit of a lease granted while the key was at
// its limit (a grant ahead's, or one that found nothing). The key's next
// call then finds a unit due, or coming, rather than asking for it and
// waiting: so an instance whose calls come less often than the units
// gets a unit for each of them (its share follows its demand), where
// asking at the call left every other call refused. The units come when
// the limit lets them (a grant ahead); an instance whose calls stop
// loses the one lease's units it was granted, at most its share of half
// a lease's refill.
func (l *Limiter) askNext(p *policy, key string, q *quota) {
	if !q.short || q.units > 0 || q.asking != nil || l.aheadCode() != 'G' {
		return
	}
	ch := make(chan struct{})
	q.asking = ch
	n := q.aheadShare(q.size(p.lease.length, 1, p.limit.EffectiveBurst()), 1, p.lease.length, p.limit)
	l.quota.giving.Go(func() {
		if r := l.routeOf(context.Background(), key); r.b != nil && !r.b.Closed() {
			// The server is failing: the key's own calls probe it.
			q.mu.Lock()
			q.asking = nil
			close(ch)
			q.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(l.timeout, time.Second))
		defer cancel()
		if _, err := l.lease(ctx, p, key, q, ch, n, l.clock.Now(), 'G'); err == nil {
			q.mu.Unlock()
		}
	})
}

// aheadAt sets key's next grant to be asked for at q.wait, once (q is
// locked; now is before q.wait): the key is in demand, so its next lease
// is asked for the moment its units will fit, not when its next call
// comes, which may be later (calls come in waves), when a small bucket
// has capped and lost its refill.
func (l *Limiter) aheadAt(p *policy, key string, q *quota, now int64) {
	if q.ahead || now >= q.wait {
		return
	}
	q.ahead = true
	l.opts.after(time.Duration(q.wait-now), func() { l.askAhead(p, key, q) })
}

// askAhead asks for key's next lease in the background once a refusal's
// wait has ended (see allowQuota), unless a grant is under way or the
// key holds units (a call asked, or the limit changed meanwhile). The
// lease, sized to the key's demand, waits for the key's next calls.
func (l *Limiter) askAhead(p *policy, key string, q *quota) {
	now := l.clock.Now()
	if r := l.routeOf(context.Background(), key); r.b != nil && !r.b.Closed() {
		// The server is failing: the key's own calls probe it, and fall
		// back meanwhile. A background ask must not take the probe.
		q.mu.Lock()
		q.ahead = false
		q.mu.Unlock()
		return
	}
	q.mu.Lock()
	q.ahead = false
	if q.asking != nil || q.units > 0 && q.end > now || q.pol != nil && !q.pol.same(p) || now < q.wait {
		q.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	q.asking = ch
	n := q.size(p.lease.length, 1, p.limit.EffectiveBurst())
	back := q.take()
	q.mu.Unlock()
	l.giveBackHeld(key, back, p)
	l.refill(context.Background(), p, key, q, ch, n, now)
}
