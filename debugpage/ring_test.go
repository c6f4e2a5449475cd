package debugpage

import (
	"math"
	"testing"
	"time"
)

func TestRing(t *testing.T) {
	t.Parallel()
	sum := func(r *ring, now int64) [][numKinds]uint64 {
		dst := make([][numKinds]uint64, len(r.slots))
		r.sumInto(dst, now)
		return dst
	}
	r := newRing(10)
	r.add(100, 0)
	r.add(100, 0)
	r.add(101, 2)
	r.add(109, 8)
	got := sum(&r, 109)
	// Seconds 100..109, oldest first.
	if got[0][0] != 2 || got[1][2] != 1 || got[9][8] != 1 {
		t.Fatalf("window ending 109: %v", got)
	}
	// Second 110 reuses 100's slot: 100 falls out of the window and its
	// counts must not leak into 110.
	r.add(110, 2)
	got = sum(&r, 110)
	if got[0][2] != 1 || got[8][8] != 1 || got[9][2] != 1 || got[9][0] != 0 {
		t.Fatalf("window ending 110: %v", got)
	}
	// Read much later, nothing is left, though no event cleared the slots.
	for i, s := range sum(&r, 125) {
		if s != ([numKinds]uint64{}) {
			t.Fatalf("window ending 125, second %d: %v, want nothing", 116+i, s)
		}
	}
	// An event of a second older than its slot's is dropped, not counted
	// as the newer second.
	r.add(100, 1)
	if got := sum(&r, 110); got[9][1] != 0 || got[0][1] != 0 {
		t.Fatalf("a stale second changed the window: %v", got)
	}
	// Seconds before 1970 (a fake clock may start there) work too.
	r2 := newRing(10)
	r2.add(-3, 4)
	if got := sum(&r2, -1); got[7][4] != 1 {
		t.Fatalf("negative seconds: %v", got)
	}
}

func TestFloorSecond(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ns, want int64 }{
		{0, 0}, {999_999_999, 0}, {1e9, 1}, {-1, -1}, {-1e9, -1}, {-1e9 - 1, -2},
		{int64(1700000000 * time.Second), 1700000000}, {math.MinInt64, -9223372037},
	} {
		if got := floorSecond(c.ns); got != c.want {
			t.Errorf("floorSecond(%d) = %d, want %d", c.ns, got, c.want)
		}
	}
}
