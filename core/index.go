package core

import (
	"math"
	"slices"
)

// Finding idle keys. An idle key (its quota whole again) may sit anywhere in
// a shard: recency says little about when a key becomes idle (a drained key
// stays live for a whole period, a key charged once is idle again after one
// interval), so drained keys at the old end must not hide idle keys behind
// them. Each algorithm's state becomes idle at a fixed instant (algo.idleAt),
// so a shard keeps an index of candidates, (instant, key) pairs in a bounded
// min-heap, pushed when a key is inserted or refunded and when a rescan
// passes a live key. An indexed instant is a lower bound: admissions move a
// key's instant only later and are not indexed (the hot path pays nothing),
// and a refund, which moves it earlier, pushes the new instant. Keys missing
// from the index (dropped when a full index is halved) become idle no
// earlier than the shard's floor.
//
// sweep pops the candidates due by now: a key gone is skipped, an idle key
// is dropped, a live one (charged since) goes back at its true instant. When
// no candidate is due but floor is, a rescan walks the whole shard, drops
// every idle key and rebuilds the index. So whenever the shard holds an idle
// key, sweep finds one.
//
// Cost: amortised O(1) keys examined per operation, whatever the traffic.
// Each pop is paid for by the push that made its candidate. A push back is
// paid for by an admission of that key since the candidate was pushed (only
// admissions move an instant later); copies of the candidate just popped are
// skipped, so that the extra candidates refunds leave do not multiply. A
// rescan examines the shard's n keys, and runs only when floor <= now <
// every candidate's instant; floor was set when a full index was halved, and
// the idxCap/2 candidates kept then all had instants <= floor, so all of
// them have been popped since: each rescan is paid for by idxCap/2 pops, at
// most 2n/idxCap keys per pop (32 for a shard at its share, idxCap being
// share/16). The index costs 16 bytes per candidate: about one byte per key
// of capacity. In practice the old-end drop finds most idle keys first and
// rescans are rare (TestEvictionWorkIsAmortised measures it).

// maxInstant is later than every idle instant.
const maxInstant = math.MaxInt64

// due is a candidate of an index: key hash h ranks, or is idle, no
// earlier than at.
type due struct {
	at int64
	h  uint64
}

func (d due) less(e due) bool { return d.at < e.at || d.at == e.at && d.h < e.h }

// index is a bounded min-heap of candidates. No key missing from it ranks
// below floor.
type index struct {
	c     []due
	floor int64
}

// push indexes key h as a candidate from at; the index holds at most
// capacity candidates (at least 2).
func (x *index) push(at int64, h uint64, capacity int) {
	if len(x.c) == capacity {
		x.compact()
	}
	if len(x.c) == cap(x.c) {
		x.c = slices.Grow(x.c, min(capacity, max(8, 2*cap(x.c)))-len(x.c))
	}
	x.c = append(x.c, due{at, h})
	for i := len(x.c) - 1; i > 0; {
		p := (i - 1) / 2
		if !x.c[i].less(x.c[p]) {
			break
		}
		x.c[i], x.c[p] = x.c[p], x.c[i]
		i = p
	}
}

// compact halves a full index, keeping the earliest candidates, and lowers
// floor to the earliest it drops. It selects in linear time (quickselect)
// and rebuilds the heap from the kept half: O(capacity) per capacity/2
// pushes.
func (x *index) compact() {
	half := len(x.c) / 2
	selectEarliest(x.c, half)
	dropped := x.c[half]
	for _, d := range x.c[half+1:] {
		if d.less(dropped) {
			dropped = d
		}
	}
	x.floor = min(x.floor, dropped.at)
	x.c = x.c[:half]
	for i := half/2 - 1; i >= 0; i-- {
		x.siftDown(i)
	}
}

// add is push for an index kept only once it is needed (the index by
// rank): while x's floor is math.MinInt64, x promises nothing (any key may
// be missing from it) and the first use rescans, so pushes would be
// wasted.
func (x *index) add(at int64, h uint64, capacity int) {
	if x.floor != math.MinInt64 {
		x.push(at, h, capacity)
	}
}

// reset empties x, ready to index every key afresh.
func (x *index) reset() {
	x.c = x.c[:0]
	x.floor = maxInstant
}

// selectEarliest reorders d so that its k earliest candidates come first.
func selectEarliest(d []due, k int) {
	lo, hi := 0, len(d)-1
	for lo < hi {
		// Median of three as the pivot, then a Hoare partition.
		m := lo + (hi-lo)/2
		if d[m].less(d[lo]) {
			d[m], d[lo] = d[lo], d[m]
		}
		if d[hi].less(d[lo]) {
			d[hi], d[lo] = d[lo], d[hi]
		}
		if d[hi].less(d[m]) {
			d[hi], d[m] = d[m], d[hi]
		}
		p := d[m]
		i, j := lo, hi
		for i <= j {
			for d[i].less(p) {
				i++
			}
			for p.less(d[j]) {
				j--
			}
			if i <= j {
				d[i], d[j] = d[j], d[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// pop removes and returns the earliest candidate.
func (x *index) pop() due {
	top := x.c[0]
	last := len(x.c) - 1
	x.c[0] = x.c[last]
	x.c = x.c[:last]
	x.siftDown(0)
	return top
}

// siftDown moves the candidate at i down to its place in the heap.
func (x *index) siftDown(i int) {
	n := len(x.c)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && x.c[c+1].less(x.c[c]) {
			c++
		}
		if !x.c[c].less(x.c[i]) {
			return
		}
		x.c[i], x.c[c] = x.c[c], x.c[i]
		i = c
	}
}

// track indexes key h as a candidate idle from at.
func (s *shard) track(at int64, h uint64) { s.idle.push(at, h, s.idxCap) }

// sweep drops idle keys from s, called with s locked, and returns how many
// it dropped: at least one if s holds any.
func (t *table) sweep(p *policy, s *shard, now int64) int {
	alg := p.alg
	if n := t.dropOldIdle(alg, s, now, 1); n > 0 {
		return n
	}
	var last due
	popped := false
	for len(s.idle.c) > 0 && s.idle.c[0].at <= now {
		c := s.idle.pop()
		if popped && c == last {
			continue
		}
		last, popped = c, true
		s.examined++
		st, ok := s.lru.Peek(c.h)
		switch {
		case !ok:
		case alg.idle(st, now):
			s.remove(c.h)
			return 1
		default:
			s.track(max(alg.idleAt(st), now+1), c.h)
		}
	}
	if s.idle.floor <= now {
		return t.rescan(p, s, now)
	}
	return 0
}

// rescan walks every key of s, drops the idle ones and indexes the others
// afresh, by idle instant and, if p's algorithm has one, by rank. Each live
// key goes to the front as it is passed, so that a whole round leaves the
// recency order as it was.
func (t *table) rescan(p *policy, s *shard, now int64) int {
	alg := p.alg
	s.idle.reset()
	if p.rk != nil {
		s.light.reset()
	}
	dropped := 0
	for i := s.lru.Len(); i > 0; i-- {
		h, st, _ := s.lru.GetOldest()
		s.examined++
		if alg.idle(st, now) {
			s.lru.RemoveOldest()
			s.forget(h)
			dropped++
			continue
		}
		s.lru.Get(h)
		s.track(max(alg.idleAt(st), now+1), h)
		s.rankIn(p, st, h)
	}
	return dropped
}
