package core

import "sync"

// lockFor is the lock a stack holds on k for key hash h, whose shard in
// k's main table is i: the shard's, or the extended table's for a log.
func (k *Keyed) lockFor(h, i uint64) *sync.Mutex {
	if k.ext != nil {
		return &k.ext.shards[h&k.ext.mask].mu
	}
	return &k.shards[i].mu
}

// check decides cost for key hash h at now without charging it, called
// with h's shard locked: the key's log, a new one if the shard has room for
// it (reserved until settle), else the overflow log, locked until settle.
func (t *extTable) check(h uint64, now, cost int64) layerState {
	var l layerState
	sh := &t.shards[h&t.mask]
	l.x, l.found = sh.lru.Peek(h)
	if !l.found {
		if t.makeRoom(sh, now) {
			l.x = sh.newLog(h)
		} else {
			l.overflow = true
			t.overflowMu.Lock()
			l.x = &t.overflow
		}
	}
	l.t, l.v = t.alg.check(l.x, now, cost)
	return l
}

// settle charges what check decided when the whole stack admits, and
// otherwise gives back the room it reserved; h's shard is still locked.
func (t *extTable) settle(h uint64, l *layerState, cost int64, allowed bool) {
	sh := &t.shards[h&t.mask]
	if allowed {
		t.alg.push(l.x, l.t, cost)
	}
	switch {
	case l.overflow:
		t.overflowMu.Unlock()
	case l.found:
		if allowed {
			sh.lru.Get(h) // recency: admissions count, denials do not
		}
	case allowed:
		sh.lru.Add(h, l.x)
		l.x.due = t.alg.idleAt(l.x)
		sh.push(l.x)
		sh.light.add(l.x.sum, h, t.idxCap)
	default:
		t.held.Add(-1) // the room made for the key goes back
	}
}
