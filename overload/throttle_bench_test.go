package overload_test

import (
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// BenchmarkThrottle: one request's Allow and End on the system clock, to a
// backend that accepts everything (probability 0: no draw) and to one that
// refuses every other request (probability about 1/3 with K 1.5: a draw,
// and a third rejected, which costs no End).
func BenchmarkThrottle(b *testing.B) {
	run := func(b *testing.B, refuse bool, parallel bool) {
		th, err := overload.NewThrottle(overload.ThrottleConfig{K: 1.5})
		if err != nil {
			b.Fatal(err)
		}
		one := func(i int) {
			tk, ok := th.Allow()
			if !ok {
				return
			}
			e := core.EndDone
			if refuse && i%2 == 0 {
				e = core.EndDropped
			}
			tk.End(e, 0)
		}
		b.ReportAllocs()
		if !parallel {
			i := 0
			for b.Loop() {
				one(i)
				i++
			}
			return
		}
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				one(i)
				i++
			}
		})
	}
	b.Run("accepting", func(b *testing.B) { run(b, false, false) })
	b.Run("accepting-parallel", func(b *testing.B) { run(b, false, true) })
	b.Run("refusing", func(b *testing.B) { run(b, true, false) })
	b.Run("refusing-parallel", func(b *testing.B) { run(b, true, true) })
	// What reading the system clock costs on its own, of the above.
	b.Run("clock", func(b *testing.B) {
		var sum int64
		for b.Loop() {
			sum += core.SystemClock.Now()
		}
		_ = sum
	})
}
