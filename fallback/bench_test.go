package fallback_test

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
)

// fastPrimary answers at once without allocating, so that the benchmarks
// measure the wrapper alone.
type fastPrimary struct{}

func (fastPrimary) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Allowed: true, Remaining: 1}, nil
}

func (fastPrimary) Refund(context.Context, string, int) error { return nil }

// BenchmarkAllow: the wrapper's cost over its primary. "direct" is the
// primary alone. "closed" passes the caller's context on, which ends within
// the timeout, so the wrapper adds atomics only; "closed-own-timeout" is a
// caller without a deadline, for which the wrapper makes a
// context.WithTimeout; "open" decides with the local limiter (the same fast
// fake) after one clock read.
func BenchmarkAllow(b *testing.B) {
	short, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	mk := func(b *testing.B, open bool) core.Limiter {
		lim := fallback.MustNew(fastPrimary{}, fastPrimary{}, fallback.WithTimeout(2*time.Hour))
		if open {
			down := &fake{}
			down.set(storeDown)
			lim = fallback.MustNew(down, fastPrimary{}, fallback.WithBreaker(fallback.BreakerConfig{MinCalls: 1, OpenFor: time.Hour}))
			lim.Allow(context.Background(), "k", 1)
			if lim.State() != fallback.Open {
				b.Fatal("breaker not open")
			}
		}
		return lim
	}
	for _, bc := range []struct {
		name string
		lim  func(*testing.B) core.Limiter
		ctx  context.Context
	}{
		{"direct", func(*testing.B) core.Limiter { return fastPrimary{} }, short},
		{"closed", func(b *testing.B) core.Limiter { return mk(b, false) }, short},
		{"closed-own-timeout", func(b *testing.B) core.Limiter { return mk(b, false) }, context.Background()},
		{"open", func(b *testing.B) core.Limiter { return mk(b, true) }, short},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim := bc.lim(b)
			b.ReportAllocs()
			for b.Loop() {
				if d, err := lim.Allow(bc.ctx, "k", 1); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
}

// BenchmarkAllowParallel: the closed fast path from every core at once,
// where the shared decision counter is the only written line.
func BenchmarkAllowParallel(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	lim := fallback.MustNew(fastPrimary{}, fastPrimary{}, fallback.WithTimeout(2*time.Hour))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lim.Allow(ctx, "k", 1)
		}
	})
}

// TestClosedPathAllocatesNothing pins the benchmark's claim: with a caller
// deadline inside the timeout, the wrapper allocates nothing of its own.
func TestClosedPathAllocatesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	lim := fallback.MustNew(fastPrimary{}, fastPrimary{}, fallback.WithTimeout(2*time.Hour))
	if n := testing.AllocsPerRun(100, func() { lim.Allow(ctx, "k", 1) }); n != 0 {
		t.Errorf("closed Allow allocates %v times per call, want 0", n)
	}
}
