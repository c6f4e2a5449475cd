package core_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/coretest"
)

// The benchmarks use the policy of ../shared/PEERS.md (100/s, burst 100, per
// key) and the real clock, and compare with benchwork.Floor: an unbounded
// sync.Map of GCRA states updated with one CAS, reading the clock the same
// way. The workloads are benchwork's, shared with the peer comparison in
// ../benchmarks.

const (
	zipfKeys  = 100_000
	churnKeys = 1_000_000
	churnCap  = 65_536
)

var benchLimit = core.PerSecond(100)

// benchKeys returns n distinct keys, and fails the benchmark if they are not
// (a benchmark whose keys collapse to one measures nothing).
func benchKeys(b *testing.B, n int) []string {
	keys := benchwork.Keys(n)
	seen := make(map[string]struct{}, n)
	for _, k := range keys {
		seen[k] = struct{}{}
	}
	if len(seen) != n {
		b.Fatalf("%d distinct keys of %d", len(seen), n)
	}
	return keys
}

type decider interface {
	allow(key string) bool
}

type keyedDecider struct{ *core.Keyed }

func (k keyedDecider) allow(key string) bool {
	d, _ := k.Allow(context.Background(), key, 1)
	return d.Allowed
}

// floorDecider is benchwork.Floor behind the decider interface.
type floorDecider struct{ *benchwork.Floor }

func (f floorDecider) allow(key string) bool { return f.Allow(key) }

func deciders(b *testing.B, capacity int, opts ...core.Option) map[string]func() decider {
	mk := func(alg core.Algorithm) func() decider {
		return func() decider {
			k, err := core.New(benchLimit.WithAlgorithm(alg), append([]core.Option{core.WithCapacity(capacity)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			return keyedDecider{k}
		}
	}
	return map[string]func() decider{
		"floor":          func() decider { return floorDecider{benchwork.NewFloor(benchLimit)} },
		"gcra":           mk(core.GCRA),
		"token-bucket":   mk(core.TokenBucket),
		"fixed-window":   mk(core.FixedWindow),
		"sliding-window": mk(core.SlidingWindow),
		"sliding-log":    mk(core.SlidingLog),
		"sub-windows-10": func() decider {
			k, err := core.New(benchLimit.WithSubWindows(10), append([]core.Option{core.WithCapacity(capacity)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			return keyedDecider{k}
		},
	}
}

var order = []string{"floor", "gcra", "token-bucket", "fixed-window", "sliding-window", "sliding-log", "sub-windows-10"}

func BenchmarkHotSeq(b *testing.B) {
	for _, name := range order {
		b.Run(name, func(b *testing.B) {
			d := deciders(b, core.DefaultCapacity)[name]()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.allow("hot")
			}
		})
	}
}

func BenchmarkHotPar(b *testing.B) {
	for _, name := range order {
		b.Run(name, func(b *testing.B) {
			d := deciders(b, core.DefaultCapacity)[name]()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d.allow("hot")
				}
			})
		})
	}
}

func BenchmarkZipfPar(b *testing.B) {
	keys := benchKeys(b, zipfKeys)
	seq := benchwork.Zipf(zipfKeys)
	for _, name := range order {
		b.Run(name, func(b *testing.B) {
			d := deciders(b, 2*zipfKeys)[name]()
			var worker atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(worker.Add(1)) * 7919
				for pb.Next() {
					d.allow(keys[seq[i&(len(seq)-1)]])
					i++
				}
			})
		})
	}
}

func BenchmarkChurnPar(b *testing.B) {
	keys := benchKeys(b, churnKeys)
	for _, name := range order {
		b.Run(name, func(b *testing.B) {
			d := deciders(b, churnCap)[name]()
			var worker atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(worker.Add(1)) * 104_729
				for pb.Next() {
					d.allow(keys[i%churnKeys])
					i++
				}
			})
		})
	}
}

// BenchmarkMemoryPerKey reports the heap bytes per tracked key with 10⁶ keys
// in a table sized for them (the key's 64-bit hash included). Each key is
// charged once: the log rows hold one entry per key (a ring of 4).
func BenchmarkMemoryPerKey(b *testing.B) {
	keys := benchKeys(b, churnKeys)
	for _, name := range []string{"floor", "gcra", "token-bucket", "sliding-log", "sub-windows-10"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				// Twice the room, since keys do not spread evenly over the shards.
				// A frozen clock keeps every key live, so none is swept
				// out as whole again.
				d := deciders(b, 2*churnKeys, core.WithClock(coretest.NewClock(t0)))[name]()
				for _, k := range keys {
					d.allow(k)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/churnKeys, "B/key")
				if k, ok := d.(keyedDecider); ok && k.Len() != churnKeys {
					b.Fatalf("tracked %d keys, want %d", k.Len(), churnKeys)
				}
				runtime.KeepAlive(d)
			}
		})
	}
}

// BenchmarkStack: a key under two limits at once (the PEERS policy and
// 100,000/h, fixed window), against the same policy alone: the cost of
// deciding all or nothing.
func BenchmarkStack(b *testing.B) {
	keys := benchKeys(b, zipfKeys)
	seq := benchwork.Zipf(zipfKeys)
	mk := map[string]func() core.Limiter{
		"one": func() core.Limiter { return core.MustNew(benchLimit, core.WithCapacity(2*zipfKeys)) },
		"two": func() core.Limiter {
			s, err := core.NewStack([]core.Limit{
				benchLimit,
				core.PerHour(100_000).WithAlgorithm(core.FixedWindow),
			}, core.WithCapacity(2*zipfKeys))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	for _, name := range []string{"one", "two"} {
		b.Run(name+"/hot-seq", func(b *testing.B) {
			lim := mk[name]()
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				lim.Allow(ctx, "hot", 1)
			}
		})
		b.Run(name+"/zipf-par", func(b *testing.B) {
			lim := mk[name]()
			var worker atomic.Uint32
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				i := int(worker.Add(1)) * 7919
				for pb.Next() {
					lim.Allow(ctx, keys[seq[i&(len(seq)-1)]], 1)
					i++
				}
			})
		})
	}
}
