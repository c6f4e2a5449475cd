package breaker_test

import (
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// BenchmarkClosedPath: a call through a Closed breaker, entered and its
// success reported, on the system clock: what every healthy call pays.
func BenchmarkClosedPath(b *testing.B) {
	br, err := breaker.New(breaker.Config{
		Rule:  breaker.Rule{Window: 10 * time.Second, MinCalls: 20, FailureRate: 50, OpenFor: time.Second, MaxOpenFor: 4 * time.Second},
		Clock: core.SystemClock,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if br.Closed() {
				br.Success(false)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if br.Closed() {
					br.Success(false)
				}
			}
		})
	})
	b.Run("clock", func(b *testing.B) {
		var sum int64
		for b.Loop() {
			sum += core.SystemClock.Now()
		}
		_ = sum
	})
}
