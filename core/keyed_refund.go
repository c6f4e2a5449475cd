package core

import (
	"context"
	"hash/maphash"
)

// Refund gives back cost units charged to key, never beyond a whole quota.
// A key that is no longer tracked has nothing to give back to.
func (k *Keyed) Refund(_ context.Context, key string, cost int) error {
	if err := k.pol.Load().checkCost(cost); err != nil {
		return err
	}
	h := maphash.String(k.seed, key)
	now := k.now()
	if uint64(now) > maxNow {
		return clockError(now)
	}
	if k.ext != nil {
		k.ext.refund(h, now, int64(cost))
		return nil
	}
	sh := &k.shards[h&k.mask]
	sh.mu.Lock()
	if _, ok := sh.lru.Peek(h); !ok && k.dyn != nil {
		sh.mu.Unlock()
		k.dyn.carry(k, sh, h, now)
		sh.mu.Lock()
	}
	k.refundLocked(sh, h, now, int64(cost))
	sh.mu.Unlock()
	return nil
}

// refundLocked gives cost back to key hash h of sh, called with sh locked.
func (k *Keyed) refundLocked(sh *shard, h uint64, now, cost int64) {
	p := k.pol.Load()
	if st, ok := sh.lru.Peek(h); ok {
		if st, ok = p.alg.refund(st, now, cost); ok {
			sh.lru.Add(h, st)
			sh.forget(h)
			// The key may be idle earlier now: index its new instant.
			sh.track(max(p.alg.idleAt(st), now), h)
			sh.rankIn(p, st, h)
		}
	}
}
