package core

// Finding the key that loses least. When the table is full and no key of
// the shard is idle, a new key takes the place of the key whose loss is
// least (table.reuse), found as idle keys are (index.go), in an index by
// rank: a value that orders keys by what giving them up would hand back,
// stands still while the state does, and (nearly always) only grows with
// admissions. For the token bucket, GCRA and the leaky bucket the rank is
// the idle instant (the sooner whole, the less spent), so the idle index
// serves; the windows and warm-up, whose keys of one window share an idle
// instant, keep a second index of the same kind by their own rank (algo
// ranker). The popped candidate is the least of the index when its key's
// rank is still the one indexed (else it goes back at its true rank, paid
// for by an admission), and the least of the shard when that rank is at
// most the index's floor (else a rescan rebuilds the index, paid for as
// index.go says). The index by rank is built by the first rescan, when the
// table is first full (index.add): until then no key is pushed, so a table
// that never fills pays nothing for it. The log table does the same with
// its own index (extTable.reuse).

// rankIn indexes key h, whose state is now st, by rank, when p's algorithm
// keeps an index by rank and the index is kept: it is built by the first
// reuse (a rescan), so a table that never fills pays nothing for it.
func (s *shard) rankIn(p *policy, st state, h uint64) {
	if p.rk != nil {
		s.light.add(p.rk.rank(st), h, s.idxCap)
	}
}

// reuse makes room in s, called with s locked when the table is full and s
// holds no idle key: it gives up the key of s that loses least, if that
// key is spare (see algo.spare), and reports whether it did. The key's
// room goes to the new key. A rescan on the way may drop idle keys
// instead, which frees their room the same way.
func (t *table) reuse(p *policy, s *shard, now int64) bool {
	if p.keep {
		return false
	}
	x := &s.idle
	if p.rk != nil {
		x = &s.light
	}
	rescanned := false
	for {
		if len(x.c) == 0 && (rescanned || x.floor == maxInstant) {
			return false
		}
		if len(x.c) > 0 {
			c := x.c[0]
			s.examined++
			st, ok := s.lru.Peek(c.h)
			if !ok {
				x.pop()
				continue
			}
			r := p.rank(st)
			if r > c.at {
				// Charged since it was indexed: back at its true rank.
				x.pop()
				x.push(r, c.h, s.idxCap)
				continue
			}
			if r <= x.floor || rescanned {
				if !p.alg.spare(st, now) {
					return false
				}
				x.pop()
				s.remove(c.h)
				return true
			}
		}
		// Keys missing from the index may rank lower than any in it.
		rescanned = true
		if n := t.rescan(p, s, now); n > 0 {
			t.release(s, n-1)
			return true
		}
	}
}

// reuse gives up the key of s whose log counts least, if it is spare (at
// most half of Events, or one), to make room for a new key, as the main
// table's reuse does, and reports whether it did. s holds no idle key.
func (t *extTable) reuse(s *extShard, now int64) bool {
	ix := &s.light
	rescanned := false
	for {
		if len(ix.c) == 0 && (rescanned || ix.floor == maxInstant) {
			return false
		}
		if len(ix.c) > 0 {
			c := ix.c[0]
			x, ok := s.lru.Peek(c.h)
			if !ok {
				ix.pop()
				continue
			}
			if x.sum > c.at {
				// Charged since it was indexed: back at its true rank.
				ix.pop()
				ix.push(x.sum, c.h, t.idxCap)
				continue
			}
			if x.sum <= ix.floor || rescanned {
				if !t.alg.spare(x, now) {
					return false
				}
				ix.pop()
				s.remove(x)
				return true
			}
		}
		// Keys missing from the index may count less than any in it.
		rescanned = true
		t.rescan(s)
	}
}

// rescan indexes every key of s afresh by rank. Each key goes to the front
// as it is passed, so that a whole round leaves the recency order as it
// was.
func (t *extTable) rescan(s *extShard) {
	s.light.reset()
	for i := s.lru.Len(); i > 0; i-- {
		h, x, _ := s.lru.GetOldest()
		s.lru.Get(h)
		s.light.push(x.sum, h, t.idxCap)
	}
}

// newLog returns an empty log for key hash h: the last one dropped, if s
// kept it, else a new one.
func (s *extShard) newLog(h uint64) *xlog {
	x := s.free
	if x == nil {
		return &xlog{h: h}
	}
	s.free = nil
	ring := x.ring
	if len(ring) > firstRing {
		ring = nil // a key that uses little holds little
	}
	*x = xlog{ring: ring, h: h}
	return x
}
