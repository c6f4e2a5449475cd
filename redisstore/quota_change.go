package redisstore

import "github.com/floodgate/floodgate/core"

// A Dynamic's key may change its limit while this instance holds a lease
// on it. A lease is bound to the limit it was granted under: the first
// decision under another limit ends it before spending any of it, and goes
// to Redis under the new limit (a round trip, or a new grant). Its unspent
// units were charged to the key's state under the old limit; they go back
// only in a measure that never gives back more than that charge took:
//
//   - GCRA: the charge moved the key's theoretical arrival time by
//     units × the old interval; the return moves it back by as much (a
//     refund under the old limit, which reads nothing else of it), never
//     before now.
//   - Token bucket: the charge took units tokens, and a key's tokens are
//     read as tokens under any limit; the return adds as many under the
//     new limit (refilling at its rate up to now, at most its burst), as
//     any decision under it would.
//   - Fixed window: with the same period, the windows are the same, and
//     the return gives the units back to the window they were taken from
//     (none once it has ended). With another period they are dropped:
//     they stay charged, as a killed instance's do, until the window
//     ends.
//
// So a key whose limit changes is never given back more than it was
// charged for what was not spent, and the bound holds as stated.

// held is a lease taken off its key: the policy it was granted under, its
// unspent units and the server's instant of its grant.
type held struct {
	pol           *policy
	units, gs, gn int64
}

// take ends q's lease, if any (q is locked), and returns what it held.
func (q *quota) take() held {
	h := held{pol: q.pol, units: q.units, gs: q.gs, gn: q.gn}
	q.units, q.end, q.start = 0, 0, 0
	return h
}

// same reports whether p and o are the same limit's, as a Dynamic's
// policies of one limit are (a limit beyond its cache gets a new policy on
// each call).
func (p *policy) same(o *policy) bool { return p == o || p.limit == o.limit }

// current returns the policy key's limit has now: a Dynamic's, from its
// limit function (nil if that limit cannot be used), else the one policy
// of the Limiter or Stack, h.
func (qs *quotas) current(key string, h *policy) *policy {
	if qs.policyOf == nil {
		return h
	}
	p, err := qs.policyOf(key)
	if err != nil {
		return nil
	}
	return p
}

// giveBackHeld gives back h's units, if any, for key whose limit now has
// the policy cur: under h's own policy when the limit is the same, else
// by the rule above (nil: none).
func (l *Limiter) giveBackHeld(key string, h held, cur *policy) {
	if h.units == 0 {
		return
	}
	if p := backUnder(h.pol, cur); p != nil {
		l.giveBack(p, key, h.units, h.gs, h.gn)
	}
}

// backUnder returns the policy a lease granted under old gives its units
// back under when the key's limit has the policy cur; nil: they are
// dropped.
func backUnder(old, cur *policy) *policy {
	switch {
	case cur == nil:
		return nil
	case old.same(cur):
		return old
	}
	switch old.limit.Algorithm {
	case core.GCRA:
		return old
	case core.TokenBucket:
		return cur
	case core.FixedWindow:
		if old.limit.Period == cur.limit.Period {
			return cur
		}
	}
	return nil
}
