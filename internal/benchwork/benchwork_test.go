package benchwork_test

import (
	"fmt"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
)

func TestKeysDistinct(t *testing.T) {
	keys := benchwork.Keys(10_000)
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	if len(seen) != len(keys) {
		t.Fatalf("%d distinct of %d", len(seen), len(keys))
	}
}

func TestZipf(t *testing.T) {
	a, b := benchwork.Zipf(1000), benchwork.Zipf(1000)
	if &a[0] != &b[0] || len(a) != benchwork.SeqLen {
		t.Fatal("Zipf is not one fixed, shared sequence")
	}
	counts := make([]int, 1000)
	for _, i := range a {
		counts[i]++
	}
	// Skewed: the first key far more often than the hundredth, and many
	// keys seen at all.
	used := 0
	for _, c := range counts {
		if c > 0 {
			used++
		}
	}
	if counts[0] < 20*counts[99] || used < 500 {
		t.Fatalf("not Zipf-like: counts[0]=%d counts[99]=%d, %d keys used", counts[0], counts[99], used)
	}
}

func TestFloorBurst(t *testing.T) {
	f := benchwork.NewFloor(core.PerMinute(5))
	n := 0
	for i := 0; i < 8; i++ {
		if f.Allow("k") {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("admitted %d, want the burst of 5", n)
	}
}

func ExampleFloor() {
	f := benchwork.NewFloor(core.PerHour(2))
	fmt.Println(f.Allow("a"), f.Allow("a"), f.Allow("a"), f.Allow("b"))
	// Output: true true false true
}
