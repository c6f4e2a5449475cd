package debugpage

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// check verifies the summary's structure: the heap is a min-heap, every
// counter is reachable from its hash's home slot through a run of
// occupied slots, the table and the counters point at each other, and the
// counts add up to the weight seen (Space-Saving never loses weight).
func (s *spaceSaving) check(t *testing.T) {
	t.Helper()
	if len(s.heap) != len(s.keys) {
		t.Fatalf("%d heap nodes for %d keys", len(s.heap), len(s.keys))
	}
	var sum uint64
	for i, n := range s.heap {
		sum += n.count
		if i > 0 && s.heap[(i-1)/2].count > n.count {
			t.Fatalf("heap order broken at %d: parent %d > %d", i, s.heap[(i-1)/2].count, n.count)
		}
		if e := s.keys[n.key]; e.pos != int32(i) {
			t.Fatalf("heap node %d names key %d (%q), which says node %d", i, n.key, e.key, e.pos)
		}
	}
	for i, e := range s.keys {
		if got := s.table[e.slot]; got != int32(i+1) {
			t.Fatalf("key %d (%q) says slot %d, which holds %d", i, e.key, e.slot, got)
		}
		for p := e.hash & s.mask; p != uint64(e.slot); p = (p + 1) & s.mask {
			if s.table[p] == 0 {
				t.Fatalf("key %q unreachable: empty slot %d between home %d and slot %d", e.key, p, e.hash&s.mask, e.slot)
			}
		}
	}
	used := 0
	for _, v := range s.table {
		if v != 0 {
			used++
		}
	}
	if used != len(s.keys) {
		t.Fatalf("%d table slots used for %d keys", used, len(s.keys))
	}
	if sum != s.total {
		t.Fatalf("counts add up to %d, %d added", sum, s.total)
	}
}

func TestSpaceSavingExactWhileCountersLast(t *testing.T) {
	t.Parallel()
	seed := maphash.MakeSeed()
	s := newSpaceSaving(64)
	truth := map[string]uint64{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		k := fmt.Sprint("k", rng.IntN(64))
		w := uint64(1 + rng.IntN(3))
		truth[k] += w
		s.add(k, maphash.String(seed, k), w)
	}
	s.check(t)
	if len(s.keys) != len(truth) {
		t.Fatalf("%d counters for %d keys", len(s.keys), len(truth))
	}
	for _, c := range s.appendTo(nil) {
		if c.count != truth[c.key] || c.err != 0 {
			t.Errorf("%s: count %d err %d, want exactly %d", c.key, c.count, c.err, truth[c.key])
		}
	}
	if s.min() != s.heap[0].count {
		t.Errorf("min() = %d with every counter used, want the root's %d", s.min(), s.heap[0].count)
	}
}

// TestSpaceSavingErrorBound checks the guarantees the page's numbers rest
// on, at checkpoints along streams that take counters over all the time:
// every listed count is within [true, true+err], err <= min <= N/m, every
// key heavier than N/m is listed, and every key not listed weighs at most
// min.
func TestSpaceSavingErrorBound(t *testing.T) {
	t.Parallel()
	streams := map[string]func(rng *rand.Rand, i int) (string, uint64){
		// A few heavy keys in a long tail, as traffic under attack looks.
		"zipf": func() func(*rand.Rand, int) (string, uint64) {
			var z *rand.Zipf
			return func(rng *rand.Rand, i int) (string, uint64) {
				if z == nil {
					z = rand.NewZipf(rng, 1.2, 1, 20000)
				}
				return fmt.Sprint("z", z.Uint64()), 1
			}
		}(),
		// Round robin over more keys than counters: the worst case for
		// takeovers; nobody is heavy, every count is mostly error.
		"round-robin": func(_ *rand.Rand, i int) (string, uint64) { return fmt.Sprint("r", i%1000), 1 },
		// Weighted events: one heavy key amid random weights.
		"weighted": func(rng *rand.Rand, i int) (string, uint64) {
			if i%5 == 0 {
				return "heavy", 3
			}
			return fmt.Sprint("w", rng.IntN(5000)), uint64(1 + rng.IntN(4))
		},
	}
	for name, next := range streams {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const m = 64
			seed := maphash.MakeSeed()
			rng := rand.New(rand.NewPCG(3, 4))
			s := newSpaceSaving(m)
			truth := map[string]uint64{}
			var n uint64
			for i := 1; i <= 30000; i++ {
				k, w := next(rng, i)
				truth[k] += w
				n += w
				s.add(k, maphash.String(seed, k), w)
				if i%3000 != 0 {
					continue
				}
				s.check(t)
				bound := n / m
				if s.min() > bound {
					t.Fatalf("after %d: min %d > N/m = %d", i, s.min(), bound)
				}
				listed := map[string]bool{}
				for _, c := range s.appendTo(nil) {
					listed[c.key] = true
					tr := truth[c.key]
					if c.count < tr || c.count-c.err > tr {
						t.Fatalf("after %d: %s true %d outside [count-err, count] = [%d, %d]", i, c.key, tr, c.count-c.err, c.count)
					}
					if c.err > s.min() {
						t.Fatalf("after %d: %s err %d > min %d", i, c.key, c.err, s.min())
					}
				}
				for k, tr := range truth {
					if !listed[k] && tr > s.min() {
						t.Fatalf("after %d: %s (true %d) not listed though above min %d", i, k, tr, s.min())
					}
					if tr > bound && !listed[k] {
						t.Fatalf("after %d: %s (true %d) heavier than N/m = %d but not listed", i, k, tr, bound)
					}
				}
			}
			if name != "round-robin" && s.min() == 0 {
				t.Fatalf("the stream never filled the counters; the test checked nothing about takeovers")
			}
		})
	}
}

// TestSpaceSavingCollisions forces every key into a handful of home slots
// so that probe runs wrap around the table and deletions shift entries
// back across the wrap.
func TestSpaceSavingCollisions(t *testing.T) {
	t.Parallel()
	s := newSpaceSaving(8) // 16 slots
	rng := rand.New(rand.NewPCG(5, 6))
	truth := map[string]uint64{}
	for i := range 20000 {
		n := rng.IntN(40)
		k := fmt.Sprint("c", n)
		// Homes 13, 14, 15 and 0: runs cross the table's end.
		h := uint64(13+n%4) | uint64(n)<<32
		truth[k]++
		s.add(k, h, 1)
		if i%97 == 0 {
			s.check(t)
		}
	}
	s.check(t)
	for _, c := range s.appendTo(nil) {
		if tr := truth[c.key]; c.count < tr || c.count-c.err > tr {
			t.Fatalf("%s true %d outside [%d, %d]", c.key, tr, c.count-c.err, c.count)
		}
	}
}
