package core_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
)

// BenchmarkDynamic measures a Dynamic limiter's decision next to Keyed's,
// GCRA, on the workloads of BenchmarkHotSeq, BenchmarkHotPar and
// BenchmarkZipfPar: "keyed" is core.New, "dynamic-1" a Dynamic whose
// function returns one limit, "dynamic-2" two tiers (odd and even keys), as
// free and paid API keys. Keys keep their limit: the cost measured is the
// limit function and the look-up of its table.
func BenchmarkDynamic(b *testing.B) {
	gcra := benchLimit.WithAlgorithm(core.GCRA)
	paid := gcra.WithBurst(200)
	mk := map[string]func() core.Limiter{
		"keyed": func() core.Limiter {
			return core.MustNew(gcra, core.WithCapacity(2*zipfKeys))
		},
		"dynamic-1": func() core.Limiter {
			return must(core.NewDynamic(func(string) core.Limit { return gcra }, core.WithCapacity(2*zipfKeys)))
		},
		"dynamic-2": func() core.Limiter {
			return must(core.NewDynamic(func(key string) core.Limit {
				if len(key) > 0 && key[len(key)-1]&1 == 1 {
					return paid
				}
				return gcra
			}, core.WithCapacity(2*zipfKeys)))
		},
	}
	names := []string{"keyed", "dynamic-1", "dynamic-2"}
	ctx := context.Background()
	for _, name := range names {
		b.Run("HotSeq/"+name, func(b *testing.B) {
			lim := mk[name]()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				lim.Allow(ctx, "hot", 1)
			}
		})
	}
	for _, name := range names {
		b.Run("HotPar/"+name, func(b *testing.B) {
			lim := mk[name]()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					lim.Allow(ctx, "hot", 1)
				}
			})
		})
	}
	keys := benchKeys(b, zipfKeys)
	seq := benchwork.Zipf(zipfKeys)
	for _, name := range names {
		b.Run("ZipfPar/"+name, func(b *testing.B) {
			lim := mk[name]()
			var worker atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(worker.Add(1)) * 7919
				for pb.Next() {
					lim.Allow(ctx, keys[seq[i&(len(seq)-1)]], 1)
					i++
				}
			})
		})
	}
}
