package core

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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

// TestRankIndexBuiltWhenNeeded: the index by rank holds nothing while the
// table has room, and is built when a full table first gives up a key,
// then kept, for the main table and the log table alike.
func TestRankIndexBuiltWhenNeeded(t *testing.T) {
	ctx := context.Background()
	for _, l := range []Limit{PerHour(10).WithAlgorithm(FixedWindow), PerHour(10).WithAlgorithm(SlidingLog)} {
		t.Run(l.Algorithm.String(), func(t *testing.T) {
			k, err := New(l, WithCapacity(32), withShards(1))
			if err != nil {
				t.Fatal(err)
			}
			light := func() *index {
				if k.ext != nil {
					return &k.ext.shards[0].light
				}
				return &k.shards[0].light
			}
			for i := 0; i < 32; i++ {
				if d, _ := k.Allow(ctx, "k"+strconv.Itoa(i), 1); !d.Allowed || d.Overflow {
					t.Fatalf("key %d: %+v", i, d)
				}
			}
			if x := light(); len(x.c) != 0 || x.floor != math.MinInt64 {
				t.Fatalf("with room: %d candidates, floor %d; want none, not built", len(x.c), x.floor)
			}
			for i := 32; i < 34; i++ {
				if d, _ := k.Allow(ctx, "k"+strconv.Itoa(i), 1); !d.Allowed || d.Overflow {
					t.Fatalf("key %d, the table full: %+v, want a key given up", i, d)
				}
			}
			// 32 keys indexed by the rescan (the index holds 32), one popped
			// and one pushed per new key since.
			if x := light(); len(x.c) != 32 || x.floor != maxInstant {
				t.Fatalf("once full: %d candidates, floor %d; want 32, %d", len(x.c), x.floor, int64(maxInstant))
			}
		})
	}
}
