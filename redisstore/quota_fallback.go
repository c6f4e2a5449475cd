package redisstore

import (
	"hash/maphash"
	"math"
	"sync"

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
// A key's share lasts until a newer grant is seen for it, or (a
// Dynamic's) until its limit changes: the next outage starts again from
// that grant. The lease in force when Redis fails is spent first, as it
// would be anyway; its units were charged before. A stack's keys fall
// back to the whole limit, as without local quota.

// shares are the keys' shares, in shards, bounded like the quotas.
type shares struct {
	max    int // keys per shard
	seed   maphash.Seed
	shards [16]shareShard

	// The holders of the most recent grant of any key, and when they were
	// read (process clock; 0: never).
	mu         sync.Mutex
	latest, at int64
}

type shareShard struct {
	mu sync.Mutex
	m  map[string]*share
}

// share is one key's share and its state.
type share struct {
	terms shareTerms
	limit core.Limit // the key's, which the decisions name
	from  int64      // the grant it was warmed from (process clock); 0: none
	// GCRA and token bucket: the instant the share is whole again.
	// Fixed window: when the window ends, and the units it admitted.
	tat, end, count int64
}

// sharesOf returns l's shares if l, not a stack's, was made with both
// WithLocalQuota and WithFallback; nil otherwise.
func (l *Limiter) sharesOf() *shares {
	if l.local == nil || l.quota == nil || l.layers != nil {
		return nil
	}
	s := &shares{max: max(1, (l.quota.keys+15)/16), seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = map[string]*share{}
	}
	return s
}

// allowShare decides for key while Redis fails, under this instance's
// share of the key's limit; false if the key has no limit to share (a
// Dynamic's limit function gave one it cannot use), which the whole-limit
// fallback answers.
func (l *Limiter) allowShare(key string, cost int) (core.Decision, bool) {
	now := l.clock.Now()
	s := l.shareOf(key, now)
	if s == nil {
		return core.Decision{}, false
	}
	sh := l.share.shard(key)
	sh.mu.Lock()
	d := s.allow(now, int64(cost))
	sh.mu.Unlock()
	d.Limit = s.limit // the headers name the limit, not the share
	return d, true
}

// refundShare gives cost units back to key's share, if it has one, and
// reports whether the key has a limit to share (as allowShare).
func (l *Limiter) refundShare(key string, cost int) bool {
	p := l.quota.current(key, l.pol)
	if p == nil {
		return false
	}
	now := l.clock.Now()
	sh := l.share.shard(key)
	sh.mu.Lock()
	if s := sh.m[key]; s != nil && s.limit == p.limit {
		s.refund(now, int64(cost))
	}
	sh.mu.Unlock()
	return true
}

func (ss *shares) shard(key string) *shareShard {
	return &ss.shards[maphash.String(ss.seed, key)%uint64(len(ss.shards))]
}

// shareOf returns key's share at now: the one in place, unless the key was
// granted since it was made, or its limit changed (then one warmed from
// the last grant under the limit in force); nil if the key's limit cannot
// be used.
func (l *Limiter) shareOf(key string, now int64) *share {
	ss := l.share
	p := l.quota.current(key, l.pol)
	if p == nil {
		return nil
	}
	from, h, rem, reset := l.lastGrant(key, now, p)
	sh := ss.shard(key)
	sh.mu.Lock()
	s := sh.m[key]
	sh.mu.Unlock()
	if s != nil && s.from == from && s.limit == p.limit {
		return s
	}
	if from == 0 {
		h = ss.latestHolders(l.quota, now, p.lease.length)
	}
	w := termsOf(p.limit, h).warm(from, rem, reset)
	w.limit = p.limit
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.m[key]; s != nil && s.from == from && s.limit == p.limit {
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

// lastGrant returns what key's last grant here under p saw: when it was
// sent (process clock; 0: never), the holders, the units the shared state
// had left and its ResetAfter.
func (l *Limiter) lastGrant(key string, now int64, p *policy) (sent, holders, rem, reset int64) {
	q := l.quota.get(key, now)
	if q == nil {
		return 0, 0, 0, 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holders == 0 || q.pol == nil || !q.pol.same(p) {
		return 0, 0, 0, 0
	}
	return q.sent, q.holders, q.remaining, q.reset
}

// latestHolders returns the holders of the most recent grant of any key
// (1 when there was none), read from the quotas at most once per length
// (a lease's): a key never granted here is shared among as many instances
// as the others.
func (ss *shares) latestHolders(qs *quotas, now, length int64) int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.at != 0 && now-ss.at < length {
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
