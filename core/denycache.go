package core

import (
	"math"
	"sync/atomic"
)

// slot caches one denied key: its hash, its state, the instant before which
// no request of any cost can be admitted, and the instant its quota is whole
// again. Readers use it as a seqlock; only the holder of the shard's lock
// writes it.
//
// A slot answers for a key only while the shard tracks that key with that
// state: the shard forgets the slot when it admits or refunds the key and
// when it evicts it, so an answer from the cache is always the answer the
// locked path would give.
type slot struct {
	seq            atomic.Uint64
	hash           atomic.Uint64
	a, b           atomic.Int64
	until, resetAt atomic.Int64
}

// slotsFor is how many deny-cache slots a shard holding share keys gets: room
// for the keys being hammered at one time, not for every key: a few percent
// of the shard, from 8 to 256 slots (12 KiB).
func slotsFor(share int) int {
	n := 8
	for n < share/16 && n < 256 {
		n *= 2
	}
	return n
}

// loadWaits returns the cached instants for key hash h if they still hold
// at now.
func (s *slot) loadWaits(h uint64, now int64) (until, resetAt int64, ok bool) {
	seq := s.seq.Load()
	if seq&1 != 0 || s.hash.Load() != h {
		return 0, 0, false
	}
	until, resetAt = s.until.Load(), s.resetAt.Load()
	return until, resetAt, now < until && s.seq.Load() == seq
}

// load returns the cached state for key hash h if it still holds at now.
func (s *slot) load(h uint64, now int64) (st state, ok bool) {
	seq := s.seq.Load()
	if seq&1 != 0 || s.hash.Load() != h || now >= s.until.Load() {
		return state{}, false
	}
	st = state{a: s.a.Load(), b: s.b.Load()}
	return st, s.seq.Load() == seq
}

func (s *slot) store(h uint64, st state, until, resetAt int64) {
	s.seq.Add(1)
	s.hash.Store(h)
	s.a.Store(st.a)
	s.b.Store(st.b)
	s.until.Store(until)
	s.resetAt.Store(resetAt)
	s.seq.Add(1)
}

func (s *slot) forget(h uint64) {
	if s.hash.Load() == h {
		s.seq.Add(1)
		s.until.Store(math.MinInt64)
		s.seq.Add(1)
	}
}

// clear forgets whatever s holds.
func (s *slot) clear() {
	s.seq.Add(1)
	s.until.Store(math.MinInt64)
	s.seq.Add(1)
}
