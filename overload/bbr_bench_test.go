package overload

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// benchBBR is a limiter on the system clock whose window holds a bound
// of about 2²⁰, so that a hot CPU checks the bound on every request and
// admits.
func benchBBR(b *testing.B, cpu float64) *BBR {
	lim, err := NewBBR(BBRConfig{CPU: func() float64 { return cpu }})
	if err != nil {
		b.Fatal(err)
	}
	now := core.SystemClock.Now()
	lim.win.add(now-lim.win.width, int64(time.Second), 1<<20)
	lim.win.add(now-lim.win.width, 0, 100<<20) // mean latency 10ms
	return lim
}

func benchAdmit(b *testing.B, lim core.Limiter) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d, _ := lim.Allow(ctx, "k", 1)
			d.Lease.Release(ctx)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d, _ := lim.Allow(ctx, "k", 1)
				d.Lease.Release(ctx)
			}
		})
	})
}

// BenchmarkBBRAdmit: an admission and its Release, with the CPU below the
// threshold (cold) and past it (hot: the bound is checked).
func BenchmarkBBRAdmit(b *testing.B) {
	b.Run("cold", func(b *testing.B) { benchAdmit(b, benchBBR(b, 0.5)) })
	b.Run("hot", func(b *testing.B) { benchAdmit(b, benchBBR(b, 0.9)) })
}

// BenchmarkBBRShed: a refusal (the CPU hot and the bound reached).
func BenchmarkBBRShed(b *testing.B) {
	lim, err := NewBBR(BBRConfig{CPU: func() float64 { return 1 }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	lim.Allow(ctx, "", 1) // the bound with no data: one in flight
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, _ := lim.Allow(ctx, "", 1); !d.Shed {
				b.Fatal("admitted")
			}
		}
	})
}

// BenchmarkStaticConcurrency is core's in-flight limit beside BBR, for
// comparison.
func BenchmarkStaticConcurrency(b *testing.B) {
	lim, err := core.New(core.InFlight(1 << 20))
	if err != nil {
		b.Fatal(err)
	}
	benchAdmit(b, lim)
}
