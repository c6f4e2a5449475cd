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
// A stack's key has a share of each layer, decided all or nothing as
// core.Stack decides. The grant's reply names one layer, the one with the
// least left (or, refused, the one that waits longest): its share starts
// warm from that reply, the others' whole, since the reply does not say
// what they had left; together the instances admit at most one burst more
// of such a layer, never a burst per instance.
//
// A key's share lasts until a newer grant is seen for it, or (a
// Dynamic's) until its limit changes: the next outage starts again from
// that grant. The lease in force when Redis fails is spent first, as it
// would be anyway; its units were charged before.

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
	m  map[string]*shared
}

// shared is one key's shares: one per layer of a stack, else one.
type shared struct {
	limit  core.Limit   // the key's policy's, which it was made for
	from   int64        // the grant it was warmed from (process clock); 0: none
	limits []core.Limit // each layer's, which the decisions name
	layers []share
}

// share is one layer's share and its state.
type share struct {
	terms shareTerms
	// GCRA and token bucket: the instant the share is whole again.
	// Fixed window: when the window ends, and the units it admitted.
	tat, end, count int64
}

// grantSeen is what a key's last grant saw: when it was sent (process
// clock; 0: never), the holders, the units the shared state had left (a
// stack's: the least of its layers'), their layer's limit and ResetAfter.
type grantSeen struct {
	sent, holders, rem, reset int64
	layer                     core.Limit
}

// sharesOf returns l's shares if l was made with both WithLocalQuota and
// WithFallback; nil otherwise.
func (l *Limiter) sharesOf() *shares {
	if l.local == nil || l.quota == nil {
		return nil
	}
	s := &shares{max: max(1, (l.quota.keys+15)/16), seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = map[string]*shared{}
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
	// The decision names the limit (a stack's layer), not the share: the
	// headers stay those of the limit.
	d := allowAll(s.layers, s.limits, now, int64(cost))
	sh.mu.Unlock()
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
		for i := range s.layers {
			s.layers[i].refund(now, int64(cost))
		}
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
func (l *Limiter) shareOf(key string, now int64) *shared {
	ss := l.share
	p := l.quota.current(key, l.pol)
	if p == nil {
		return nil
	}
	g := l.lastGrant(key, now, p)
	sh := ss.shard(key)
	sh.mu.Lock()
	s := sh.m[key]
	sh.mu.Unlock()
	if s != nil && s.from == g.sent && s.limit == p.limit {
		return s
	}
	if g.sent == 0 {
		g.holders = ss.latestHolders(l.quota, now, p.lease.length)
	}
	w := &shared{limit: p.limit, from: g.sent, limits: l.limits}
	if w.limits == nil {
		w.limits = []core.Limit{p.limit}
	}
	for _, lim := range w.limits {
		t := termsOf(lim, g.holders)
		if lim != g.layer {
			// A layer the reply did not name had more left, how much
			// it does not say: its share starts whole.
			w.layers = append(w.layers, share{terms: t})
			continue
		}
		w.layers = append(w.layers, t.warm(g.sent, g.rem, g.reset))
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.m[key]; s != nil && s.from == g.sent && s.limit == p.limit {
		return s // made meanwhile by another call
	}
	if sh.m[key] == nil && len(sh.m) >= ss.max {
		sh.prune(now)
	}
	sh.m[key] = w
	return w
}

// prune drops the shares whole at now or, if none is, the one closest to
// whole: it loses least by starting afresh.
func (sh *shareShard) prune(now int64) {
	first, at := "", int64(math.MaxInt64)
	n := len(sh.m)
	for k, s := range sh.m {
		w := int64(0)
		for i := range s.layers {
			w = max(w, s.layers[i].whole())
		}
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

// lastGrant returns what key's last grant here under p saw; the zero
// grantSeen if there was none.
func (l *Limiter) lastGrant(key string, now int64, p *policy) grantSeen {
	q := l.quota.get(key, now)
	if q == nil {
		return grantSeen{}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holders == 0 || q.pol == nil || !q.pol.same(p) {
		return grantSeen{}
	}
	return grantSeen{sent: q.sent, holders: q.holders, rem: q.remaining, reset: q.reset, layer: q.limit}
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
