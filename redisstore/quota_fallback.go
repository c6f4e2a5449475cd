package redisstore

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/floodgate/floodgate/core"
)

// The fallback of a Limiter made with both WithLocalQuota and WithFallback:
// while Redis fails, each key is decided in memory under this instance's
// share of the limit, not the whole of it, so that the fleet stays near
// the limit instead of admitting it once per instance.
//
// A key's share is the limit among the instances that held a lease on it
// at its last grant (quota.holders, counted by quota.lua): the rate and the
// burst (a fixed window's events) divided by them, at least one unit. The
// share starts warm, from the state the last grant's reply reported:
// Remaining divided among the same holders, refilled since the grant was
// sent at the share's rate (a fixed window's within the grant's window
// only). A key never granted here is shared among the holders of the most
// recent grant of any key (1 when there was none), and starts whole.
//
// A key's share lasts until a newer grant is seen for it: the next outage
// starts again from that grant. The lease in force when Redis fails is
// spent first, as it would be anyway; its units were charged before.

// shares are the keys' shares, in shards, bounded like the quotas.
type shares struct {
	limit  core.Limit
	max    int // keys per shard
	seed   maphash.Seed
	shards [16]shareShard

	// The holders of the most recent grant of any key, and when they were
	// read (process clock; 0: never).
	mu          sync.Mutex
	latest, at  int64
	latestEvery int64 // how long a reading serves: one lease length
}

type shareShard struct {
	mu sync.Mutex
	m  map[string]*share
}

// share is one key's share and its state.
type share struct {
	terms shareTerms
	from  int64 // the grant it was warmed from (process clock); 0: none
	// GCRA and token bucket: the instant the share is whole again.
	// Fixed window: when the window ends, and the units it admitted.
	tat, end, count int64
}

// shareTerms are one share of a limit: a GCRA (which admits as the token
// bucket does) of interval and burst, or a fixed window of burst units per
// period.
type shareTerms struct {
	fixed    bool
	holders  int64
	interval int64 // ns per unit; 0 for a fixed window
	burst    int64 // units
	period   int64 // ns; a fixed window's
}

// sharesOf returns the shares of lim, the limit of New's Limiter, if made
// with both WithLocalQuota and WithFallback; nil otherwise.
func (l *Limiter) sharesOf(lim core.Limit) *shares {
	if l.local == nil || l.quota == nil {
		return nil
	}
	s := &shares{limit: lim, max: max(1, (l.quota.keys+15)/16), seed: maphash.MakeSeed(), latestEvery: l.pol.lease.length}
	for i := range s.shards {
		s.shards[i].m = map[string]*share{}
	}
	return s
}

// termsOf returns the share of l among h holders (at least 1): a GCRA's
// interval h times l's (at most the longest span a script takes, so that
// a share's arithmetic never overflows), and l's burst (a fixed window's
// events) divided by h, at least 1.
func termsOf(l core.Limit, h int64) shareTerms {
	h = max(h, 1)
	if l.Algorithm == core.FixedWindow {
		return shareTerms{fixed: true, holders: h, burst: max(1, int64(l.Events)/h), period: int64(l.Period)}
	}
	interval := min(satMul(h, int64(l.Interval())), int64(maxSpan))
	return shareTerms{holders: h, interval: interval, burst: max(1, int64(l.EffectiveBurst())/h)}
}

// warm returns the share's state as the grant sent at the instant sent
// left it: rem units in the shared state, divided among the holders, and
// for a fixed window reset, the time left in the grant's window.
func (t shareTerms) warm(sent, rem, reset int64) share {
	s := share{terms: t, from: sent}
	left := min(t.burst, max(rem, 0)/t.holders)
	if t.fixed {
		s.end, s.count = sent+reset, t.burst-left
		return s
	}
	s.tat = satAdd(sent, satMul(t.burst-left, t.interval))
	return s
}

// allow decides for cost units at now, and charges s if it admits.
func (s *share) allow(now, cost int64) core.Decision {
	t := &s.terms
	if t.fixed {
		if now >= s.end {
			s.end, s.count = (now/t.period+1)*t.period, 0
		}
		wait := time.Duration(s.end - now)
		if s.count+cost > t.burst {
			return core.Decision{Remaining: int(t.burst - s.count), RetryAfter: max(wait, 1), ResetAfter: wait}
		}
		s.count += cost
		return core.Decision{Allowed: true, Remaining: int(t.burst - s.count), ResetAfter: wait}
	}
	tol := satMul(t.burst, t.interval)
	tat := max(s.tat, now)
	next := satAdd(tat, satMul(cost, t.interval))
	if next-now > tol {
		return core.Decision{Remaining: int((tol - (tat - now)) / t.interval),
			RetryAfter: time.Duration(next - now - tol), ResetAfter: time.Duration(tat - now)}
	}
	s.tat = next
	return core.Decision{Allowed: true, Remaining: int((tol - (next - now)) / t.interval), ResetAfter: time.Duration(next - now)}
}

// refund gives back cost units at now, never beyond a whole share.
func (s *share) refund(now, cost int64) {
	if s.terms.fixed {
		if now < s.end {
			s.count = max(0, s.count-cost)
		}
		return
	}
	s.tat = max(s.tat-satMul(cost, s.terms.interval), now)
}

// whole is the instant s is whole again.
func (s *share) whole() int64 {
	if s.terms.fixed {
		if s.count == 0 {
			return 0
		}
		return s.end
	}
	return s.tat
}

// allowShare decides for key while Redis fails, under this instance's
// share of the key's limit.
func (l *Limiter) allowShare(key string, cost int) core.Decision {
	now := l.clock.Now()
	s := l.shareOf(key, now)
	sh := l.share.shard(key)
	sh.mu.Lock()
	d := s.allow(now, int64(cost))
	sh.mu.Unlock()
	d.Limit = l.pol.limit // the headers name the limit, not the share
	return d
}

// refundShare gives cost units back to key's share, if it has one.
func (l *Limiter) refundShare(key string, cost int) {
	now := l.clock.Now()
	sh := l.share.shard(key)
	sh.mu.Lock()
	if s := sh.m[key]; s != nil {
		s.refund(now, int64(cost))
	}
	sh.mu.Unlock()
}

func (ss *shares) shard(key string) *shareShard {
	return &ss.shards[maphash.String(ss.seed, key)%uint64(len(ss.shards))]
}

// shareOf returns key's share at now: the one in place, unless the key was
// granted since it was made (then one warmed from that grant).
func (l *Limiter) shareOf(key string, now int64) *share {
	ss := l.share
	from, h, rem, reset := l.lastGrant(key, now)
	sh := ss.shard(key)
	sh.mu.Lock()
	s := sh.m[key]
	sh.mu.Unlock()
	if s != nil && s.from == from {
		return s
	}
	if from == 0 {
		h = ss.latestHolders(l.quota, now)
	}
	w := termsOf(ss.limit, h).warm(from, rem, reset)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.m[key]; s != nil && s.from == from {
		return s // made meanwhile by another call
	}
	if sh.m[key] == nil && len(sh.m) >= ss.max {
		sh.prune(now)
	}
	sh.m[key] = &w
	return &w
}

// prune drops the shares whole at now or, if none is, the one closest to
// whole: it loses least by starting afresh.
func (sh *shareShard) prune(now int64) {
	first, at := "", int64(math.MaxInt64)
	n := len(sh.m)
	for k, s := range sh.m {
		w := s.whole()
		if w <= now {
			delete(sh.m, k)
		} else if w < at {
			first, at = k, w
		}
	}
	if len(sh.m) == n {
		delete(sh.m, first)
	}
}

// lastGrant returns what key's last grant here saw: when it was sent
// (process clock; 0: never), the holders, the units the shared state had
// left and its ResetAfter.
func (l *Limiter) lastGrant(key string, now int64) (sent, holders, rem, reset int64) {
	q := l.quota.get(key, now)
	if q == nil {
		return 0, 0, 0, 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holders == 0 {
		return 0, 0, 0, 0
	}
	return q.sent, q.holders, q.remaining, q.reset
}

// latestHolders returns the holders of the most recent grant of any key
// (1 when there was none), read from the quotas at most once per lease
// length: a key never granted here is shared among as many instances as
// the others.
func (ss *shares) latestHolders(qs *quotas, now int64) int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.at != 0 && now-ss.at < ss.latestEvery {
		return ss.latest
	}
	var sent, h int64
	for i := range qs.shards {
		qsh := &qs.shards[i]
		qsh.mu.Lock()
		for _, q := range qsh.m {
			q.mu.Lock()
			if q.holders > 0 && q.sent > sent {
				sent, h = q.sent, q.holders
			}
			q.mu.Unlock()
		}
		qsh.mu.Unlock()
	}
	ss.latest, ss.at = max(h, 1), now
	return ss.latest
}

// satMul is a×b for a, b ≥ 0, at most math.MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// satAdd is a+b for b ≥ 0, at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
