package overload_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// The benchmarks time one request's admission and end, on the real
// clock, beside core's static concurrency limit (one key): Acquire and
// Token.End (no allocation), AcquireKey over many keys (no allocation),
// Allow and Lease.End (the Lease), and core's Allow and Release. No
// request is refused: the limits are far above the goroutines in
// flight. Under the limit of 1000 one admission in 8 is timed (two clock
// reads and the window's lock); AcquireTimed, under 100, times every
// one.

func newBenchAdaptive(b *testing.B) *overload.Adaptive { return newBenchAdaptiveAt(b, 1000) }

// newBenchAdaptiveAt returns a limit fixed at n (its floor and its
// start): 1000 times one admission in 8 (sampleEvery), 100 every one.
func newBenchAdaptiveAt(b *testing.B, n int) *overload.Adaptive {
	lim, err := overload.NewAdaptive(overload.AdaptiveConfig{MinLimit: n, InitialLimit: n})
	if err != nil {
		b.Fatal(err)
	}
	return lim
}

func newBenchStatic(b *testing.B) *core.Keyed {
	lim, err := core.New(core.Limit{Events: 1000, Period: time.Second, Algorithm: core.Concurrency})
	if err != nil {
		b.Fatal(err)
	}
	return lim
}

func BenchmarkAdaptiveAcquire(b *testing.B) { acquireLoop(b, newBenchAdaptive(b)) }

// BenchmarkAdaptiveAcquireTimed runs under a limit of 100, where every
// admission is timed.
func BenchmarkAdaptiveAcquireTimed(b *testing.B) { acquireLoop(b, newBenchAdaptiveAt(b, 100)) }

// acquireLoop admits and ends one Normal request per operation.
func acquireLoop(b *testing.B, lim *overload.Adaptive) {
	b.ReportAllocs()
	for b.Loop() {
		tok, ok := lim.Acquire(overload.Normal, 1)
		if !ok {
			b.Fatal("refused")
		}
		tok.End(core.EndDone)
	}
}

func BenchmarkAdaptiveAcquireParallel(b *testing.B) {
	lim := newBenchAdaptive(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tok, ok := lim.Acquire(overload.Normal, 1)
			if !ok {
				b.Error("refused")
				return
			}
			tok.End(core.EndDone)
		}
	})
}

// benchKeys are the tenants of the keyed benchmarks: more than the
// tenant table holds, most of them in flight one at a time.
var benchKeys = func() []string {
	k := make([]string, 1024)
	for i := range k {
		k[i] = fmt.Sprint("tenant-", i)
	}
	return k
}()

func BenchmarkAdaptiveAcquireKey(b *testing.B) {
	lim := newBenchAdaptive(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tok, ok := lim.AcquireKey(overload.Normal, benchKeys[i&1023], 1)
		if !ok {
			b.Fatal("refused")
		}
		tok.End(core.EndDone)
		i++
	}
}

func BenchmarkAdaptiveAcquireKeyParallel(b *testing.B) {
	lim := newBenchAdaptive(b)
	var g atomic.Int64
	acquireKeys(b, lim, func() int { return int(g.Add(1)) * 509 }, func(i int) string { return benchKeys[i&1023] })
}

// acquireKeys admits and ends a request of key(i) per operation on every
// goroutine, each counting i up from first().
func acquireKeys(b *testing.B, lim *overload.Adaptive, first func() int, key func(i int) string) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := first()
		for pb.Next() {
			tok, ok := lim.AcquireKey(overload.Normal, key(i), 1)
			if !ok {
				b.Error("refused")
				return
			}
			tok.End(core.EndDone)
			i++
		}
	})
}

// BenchmarkAdaptiveAcquireKeyFull runs past 3/4 of the limit, where
// every admission checks its tenant's share: 800 of the limit of 1000
// are held by other tenants.
func BenchmarkAdaptiveAcquireKeyFull(b *testing.B) {
	lim := newBenchAdaptive(b)
	for i := range 800 {
		if _, ok := lim.AcquireKey(overload.Normal, benchKeys[i%100], 1); !ok {
			b.Fatal("refused")
		}
	}
	acquireKeys(b, lim, func() int { return 0 }, func(i int) string { return benchKeys[100+i&511] })
}

func BenchmarkAdaptiveAllowKeys(b *testing.B) {
	lim := newBenchAdaptive(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			d, _ := lim.Allow(ctx, benchKeys[i&1023], 1)
			if !d.Allowed {
				b.Error("refused")
				return
			}
			_ = d.Lease.End(ctx, core.EndDone)
			i++
		}
	})
}

func BenchmarkAdaptiveAllow(b *testing.B) {
	lim := newBenchAdaptive(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, _ := lim.Allow(ctx, "k", 1)
		if !d.Allowed {
			b.Fatal("refused")
		}
		_ = d.Lease.End(ctx, core.EndDone)
	}
}

func BenchmarkAdaptiveAllowParallel(b *testing.B) {
	lim := newBenchAdaptive(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d, _ := lim.Allow(ctx, "k", 1)
			if !d.Allowed {
				b.Error("refused")
				return
			}
			_ = d.Lease.End(ctx, core.EndDone)
		}
	})
}

func BenchmarkCoreConcurrency(b *testing.B) {
	lim := newBenchStatic(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, _ := lim.Allow(ctx, "k", 1)
		if !d.Allowed {
			b.Fatal("refused")
		}
		_ = d.Lease.Release(ctx)
	}
}

func BenchmarkCoreConcurrencyParallel(b *testing.B) {
	lim := newBenchStatic(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d, _ := lim.Allow(ctx, "k", 1)
			if !d.Allowed {
				b.Error("refused")
				return
			}
			_ = d.Lease.Release(ctx)
		}
	})
}

// The refusals, under a limit held full (most decisions at 5× the
// capacity): no clock read, no allocation.
func BenchmarkAdaptiveRefuse(b *testing.B) {
	lim := newBenchAdaptiveAt(b, 4)
	for range 4 {
		lim.Acquire(overload.Normal, 1)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := lim.Acquire(overload.Normal, 1); ok {
				b.Error("admitted")
				return
			}
		}
	})
}

func BenchmarkAdaptiveAllowRefuse(b *testing.B) {
	lim := newBenchAdaptiveAt(b, 4)
	ctx := context.Background()
	for range 4 {
		lim.Acquire(overload.Normal, 1)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, _ := lim.Allow(ctx, "k", 1); d.Allowed {
				b.Error("admitted")
				return
			}
		}
	})
}
