package tally_test

import (
	"testing"

	"github.com/floodgate/floodgate/internal/tally"
)

// BenchmarkAdd: one count, from one goroutine and from all at once into
// the same bucket (the worst case: every core writes one word), and a
// read of a whole window.
func BenchmarkAdd(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		var w tally.Window
		for b.Loop() {
			w.Add(7)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var w tally.Window
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w.Add(7)
			}
		})
	})
	b.Run("read", func(b *testing.B) {
		var w tally.Window
		for n := range int64(tally.Buckets) {
			w.Add(n)
		}
		var sum uint64
		for b.Loop() {
			i := tally.Slot(9)
			for j := range int64(tally.Buckets) {
				sum += w.CountAt(i, 9-j)
				if i--; i < 0 {
					i = tally.Buckets - 1
				}
			}
		}
		if sum == 0 {
			b.Fatal("read nothing")
		}
	})
}
