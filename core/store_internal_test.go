package core

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestShardLayout: a shard fills three cache lines exactly, its read-only
// fields on the first, the mutex and what every algorithm writes under it
// on the second, the index by rank on the third.
func TestShardLayout(t *testing.T) {
	var s shard
	if got := unsafe.Sizeof(s); got != 192 {
		t.Fatalf("shard is %d bytes, want 192", got)
	}
	if got := unsafe.Offsetof(s.mu); got != 64 {
		t.Fatalf("shard.mu at offset %d, want 64", got)
	}
	if got := unsafe.Offsetof(s.light); got != 128 {
		t.Fatalf("shard.light at offset %d, want 128", got)
	}
}

// TestIndexPopsInOrder: the candidate heap pops by instant, then hash, and
// a full index keeps its earliest half, lowering floor to the earliest it
// drops.
func TestIndexPopsInOrder(t *testing.T) {
	s := shard{idxCap: 8, idle: index{floor: maxInstant}}
	for _, at := range []int64{50, 10, 70, 30, 20, 60, 40, 80, 5} {
		s.track(at, uint64(at))
	}
	x := &s.idle
	// The ninth candidate found the index full: 10..40 were kept, 50..80
	// dropped, then 5 was added.
	if x.floor != 50 {
		t.Fatalf("floor %d, want 50", x.floor)
	}
	want := []int64{5, 10, 20, 30, 40}
	for i, w := range want {
		if got := x.pop(); got.at != w {
			t.Fatalf("pop %d: %d, want %d", i, got.at, w)
		}
	}
	if len(x.c) != 0 {
		t.Fatalf("%d candidates left", len(x.c))
	}
}

// TestCompactKeepsEarliestHalf: on random candidates (many ties), a full
// index keeps exactly its earliest half as a valid heap, and floor is the
// earliest instant dropped.
func TestCompactKeepsEarliestHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		n := 2 + 2*r.IntN(40)
		s := index{floor: maxInstant}
		all := make([]due, n)
		for i := range all {
			all[i] = due{at: r.Int64N(int64(n/2 + 1)), h: r.Uint64N(4)}
		}
		s.c = append(s.c, all...)
		s.compact()
		sorted := slices.Clone(all)
		slices.SortFunc(sorted, func(a, b due) int {
			if a.less(b) {
				return -1
			}
			if b.less(a) {
				return 1
			}
			return 0
		})
		if s.floor != sorted[n/2].at {
			t.Fatalf("round %d: floor %d, want %d", round, s.floor, sorted[n/2].at)
		}
		for i := range s.c {
			if c := 2*i + 1; c < len(s.c) && s.c[c].less(s.c[i]) {
				t.Fatalf("round %d: heap order broken at %d", round, i)
			}
		}
		for i := range sorted[:n/2] {
			if got := s.pop(); got != sorted[i] {
				t.Fatalf("round %d: pop %d = %+v, want %+v", round, i, got, sorted[i])
			}
		}
	}
}
