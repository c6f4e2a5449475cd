package core

import (
	"testing"
	"unsafe"
)

// TestShardLayout: a shard fills two cache lines exactly, its read-only
// fields on the first, the mutex and what it guards on the second.
func TestShardLayout(t *testing.T) {
	var s shard
	if got := unsafe.Sizeof(s); got != 128 {
		t.Fatalf("shard is %d bytes, want 128", got)
	}
	if got := unsafe.Offsetof(s.mu); got != 64 {
		t.Fatalf("shard.mu at offset %d, want 64", got)
	}
}

// TestIndexPopsInOrder: the candidate heap pops by instant, then hash, and
// a full index keeps its earliest half, lowering floor to the earliest it
// drops.
func TestIndexPopsInOrder(t *testing.T) {
	s := shard{idxCap: 8, floor: maxInstant}
	for _, at := range []int64{50, 10, 70, 30, 20, 60, 40, 80, 5} {
		s.track(at, uint64(at))
	}
	// The ninth candidate found the index full: 10..40 were kept, 50..80
	// dropped, then 5 was added.
	if s.floor != 50 {
		t.Fatalf("floor %d, want 50", s.floor)
	}
	want := []int64{5, 10, 20, 30, 40}
	for i, w := range want {
		if got := s.pop(); got.at != w {
			t.Fatalf("pop %d: %d, want %d", i, got.at, w)
		}
	}
	if len(s.idx) != 0 {
		t.Fatalf("%d candidates left", len(s.idx))
	}
}
