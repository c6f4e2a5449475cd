package benchmarks

import (
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/httpmwtest"
)

// The workloads of core/bench_test.go, for every implementation at once.
const (
	zipfKeys  = 100_000
	churnKeys = 1_000_000
	churnCap  = 65_536 // the bound of the bounded stores under churn
	memKeys   = churnKeys
)

// keys returns n distinct keys, and fails if they are not: a benchmark whose
// keys collapse to one measures nothing (go-limiter's benchmarks/ never
// filled its key slice).
func keys(tb testing.TB, n int) []string {
	tb.Helper()
	ks := allKeys()[:n]
	seen := make(map[string]struct{}, n)
	for _, k := range ks {
		seen[k] = struct{}{}
	}
	if len(seen) != n {
		tb.Fatalf("%d distinct keys of %d", len(seen), n)
	}
	return ks
}

var allKeys = sync.OnceValue(func() []string { return benchwork.Keys(churnKeys) })

// zipfSeq is benchwork's fixed Zipf sequence over zipfKeys keys, the one
// core/bench_test.go runs too.
func zipfSeq() []uint32 { return benchwork.Zipf(zipfKeys) }

func reportErrors(b *testing.B, d decider) {
	if e, ok := d.(errCounter); ok {
		b.ReportMetric(float64(e.errors())/float64(b.N), "errors/op")
	}
}

// BenchmarkDecision runs the four decision workloads of core/bench_test.go
// on every implementation, on the real clock.
func BenchmarkDecision(b *testing.B) {
	zipf := keys(b, zipfKeys)
	seq := zipfSeq()
	churn := keys(b, churnKeys)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.Run("hot_seq", func(b *testing.B) {
				d := im.new(b, setup{capacity: core.DefaultCapacity})
				b.ReportAllocs()
				for b.Loop() {
					d.allow("hot")
				}
				reportErrors(b, d)
			})
			b.Run("hot_par", func(b *testing.B) {
				d := im.new(b, setup{capacity: core.DefaultCapacity})
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						d.allow("hot")
					}
				})
				reportErrors(b, d)
			})
			b.Run("zipf_par", func(b *testing.B) {
				d := im.new(b, setup{capacity: 2 * zipfKeys})
				var worker atomic.Uint32
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(worker.Add(1)) * 7919
					for pb.Next() {
						d.allow(zipf[seq[i&(len(seq)-1)]])
						i++
					}
				})
				reportErrors(b, d)
			})
			b.Run("churn_par", func(b *testing.B) {
				d := im.new(b, setup{capacity: churnCap})
				var worker atomic.Uint32
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := int(worker.Add(1)) * 104_729
					for pb.Next() {
						d.allow(churn[i%churnKeys])
						i++
					}
				})
				reportErrors(b, d)
			})
		})
	}
}

// BenchmarkMemory reports the heap bytes per tracked key with 10⁶ keys, in
// stores bounded (where they are) at twice that. The key strings exist
// before the count starts, so a store that keeps them pays only for its own
// references; one that hashes them keeps none.
func BenchmarkMemory(b *testing.B) {
	ks := keys(b, memKeys)
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				d := im.new(b, setup{capacity: 2 * memKeys, frozen: true})
				for _, k := range ks {
					d.allow(k)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/memKeys, "B/key")
				if f, ok := d.(*floodgate); ok && f.Len() != memKeys {
					b.Fatalf("tracked %d keys, want %d", f.Len(), memKeys)
				}
				runtime.KeepAlive(d)
			}
		})
	}
}

// BenchmarkHTTP measures a request through each library's net/http
// middleware in front of a bare handler, and the bare handler alone, cycling
// through nClients client addresses. Every request is allowed (see
// httpBurst), so each takes the "allowed + headers" path.
func BenchmarkHTTP(b *testing.B) {
	reqs := requests(b)
	for _, mw := range middlewares {
		b.Run(mw.name, func(b *testing.B) {
			b.Run("seq", func(b *testing.B) {
				h := mw.new(b, httpEvents, httpBurst)
				w := httpmwtest.NewWriter()
				bad := 0
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					w.Reset()
					h.ServeHTTP(w, reqs[i%nClients])
					if w.Code != http.StatusOK {
						bad++
					}
				}
				if bad > 0 {
					b.Errorf("%d of %d responses were not 200 (last %d)", bad, b.N, w.Code)
				}
			})
			b.Run("par", func(b *testing.B) {
				h := mw.new(b, httpEvents, httpBurst)
				var next, bad atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					w := httpmwtest.NewWriter()
					i := int(next.Add(nClients / 7)) // each goroutine starts elsewhere
					for pb.Next() {
						w.Reset()
						h.ServeHTTP(w, reqs[i%nClients])
						if w.Code != http.StatusOK {
							bad.Add(1)
						}
						i++
					}
				})
				if n := bad.Load(); n > 0 {
					b.Errorf("%d of %d responses were not 200", n, b.N)
				}
			})
		})
	}
}
