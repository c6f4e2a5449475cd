package core_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func newInFlight(t testing.TB, n int, opts ...core.Option) *core.Keyed {
	t.Helper()
	lim, _ := newLimiter(t, core.InFlight(n), opts...)
	return lim
}

// acquire admits cost units of key and returns the decision, failing t if
// they are refused.
func acquire(t testing.TB, lim core.Limiter, key string, cost int) core.Decision {
	t.Helper()
	d := allow(t, lim, key, cost)
	if !d.Allowed || d.Lease.IsZero() {
		t.Fatalf("Allow(%q, %d) = %+v, want an admission with a lease", key, cost, d)
	}
	return d
}

func refused(t testing.TB, lim core.Limiter, key string, cost int) core.Decision {
	t.Helper()
	d := allow(t, lim, key, cost)
	if d.Allowed || !d.Lease.IsZero() {
		t.Fatalf("Allow(%q, %d) = %+v, want a refusal without a lease", key, cost, d)
	}
	return d
}

func TestInFlight(t *testing.T) {
	t.Parallel()
	l := core.InFlight(8)
	if l != (core.Limit{Events: 8, Period: time.Second, Burst: 8, Algorithm: core.Concurrency}) || l.Validate() != nil {
		t.Fatalf("InFlight(8) = %+v, %v", l, l.Validate())
	}
	if err := core.InFlight(0).Validate(); err == nil {
		t.Fatal("InFlight(0) is valid")
	}
	if got := core.Concurrency.String(); got != "concurrency" {
		t.Fatalf("String() = %q", got)
	}
}

func TestConcurrencyCosts(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 3)
	if _, err := lim.Allow(ctx, "k", 4); !errors.Is(err, core.ErrCostTooLarge) {
		t.Fatalf("cost 4 of 3: %v, want ErrCostTooLarge", err)
	}
	if _, err := lim.Allow(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("cost 0: %v, want ErrInvalidCost", err)
	}
	// Neither charged anything.
	if d := acquire(t, lim, "k", 3); d.Remaining != 0 {
		t.Fatalf("remaining %d after the whole quota", d.Remaining)
	}
}

func TestLeaseReleasesOnce(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 2)
	a := acquire(t, lim, "k", 1)
	acquire(t, lim, "k", 1)
	for i := 0; i < 3; i++ {
		if err := a.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// One unit came back, not three.
	c := acquire(t, lim, "k", 1)
	if c.Remaining != 0 {
		t.Fatalf("remaining %d, want 0", c.Remaining)
	}
	refused(t, lim, "k", 1)
	// c's lease is a's record recycled (the pool hands back what this
	// goroutine put last, unless the race detector drops it): a's stale
	// Release, or a copy's, must not end c's admission.
	b := a
	_, _ = a.Lease.Release(ctx), b.Lease.Release(ctx)
	refused(t, lim, "k", 1)
	if err := c.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	acquire(t, lim, "k", 1)
}

// TestLeaseReleaseRace releases each lease from many goroutines at once
// (run with -race): each gives its units back exactly once.
func TestLeaseReleaseRace(t *testing.T) {
	t.Parallel()
	const n, racers = 4, 8
	lim := newInFlight(t, n)
	for round := 0; round < 50; round++ {
		var leases []core.Lease
		for i := 0; i < n; i++ {
			leases = append(leases, acquire(t, lim, "k", 1).Lease)
		}
		// Two leases released by racers, the others held.
		var wg sync.WaitGroup
		for r := 0; r < racers; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				leases[0].Release(ctx)
				leases[1].Release(ctx)
			}()
		}
		wg.Wait()
		if d := acquire(t, lim, "k", 2); d.Remaining != 0 {
			t.Fatalf("round %d: remaining %d after two releases and a cost-2 admission", round, d.Remaining)
		}
		refused(t, lim, "k", 1)
		for _, l := range leases[2:] {
			l.Release(ctx)
		}
		// The cost-2 lease is dropped unreleased: release the two units
		// by Refund, which must not go below zero.
		if err := lim.Refund(ctx, "k", 3); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrencyExactAdmission: many goroutines on a frozen clock, more
// than the limit, each asking for one unit: exactly Events are admitted,
// and once every lease is released the key's whole quota is back.
func TestConcurrencyExactAdmission(t *testing.T) {
	t.Parallel()
	const events, goroutines = 37, 200
	for _, keys := range []int{1, 3} {
		lim := newInFlight(t, events, core.WithCapacity(16))
		var admitted atomic.Int64
		leases := make(chan core.Lease, goroutines)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				key := "k" + string(rune('0'+g%keys))
				d, err := lim.Allow(ctx, key, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
					leases <- d.Lease
				}
			}()
		}
		close(start)
		wg.Wait()
		close(leases)
		if got := admitted.Load(); got != int64(min(events*keys, goroutines)) {
			t.Fatalf("%d keys: %d admitted, want %d", keys, got, min(events*keys, goroutines))
		}
		var rel sync.WaitGroup
		for l := range leases {
			rel.Add(1)
			go func() { defer rel.Done(); l.Release(ctx) }()
		}
		rel.Wait()
		for k := 0; k < keys; k++ {
			d := acquire(t, lim, "k"+string(rune('0'+k)), 1)
			if d.Remaining != events-1 {
				t.Fatalf("%d keys: key %d remaining %d after every release, want %d", keys, k, d.Remaining, events-1)
			}
			d.Lease.Release(ctx)
		}
	}
}

// TestConcurrencyKeysInFlightStay: a key with units in flight is never
// dropped for room, whatever the time; released, it is idle and is.
func TestConcurrencyKeysInFlightStay(t *testing.T) {
	t.Parallel()
	lim, clk := newLimiter(t, core.InFlight(2).WithAlgorithm(core.Concurrency), core.WithCapacity(1))
	a := acquire(t, lim, "a", 2)
	clk.Advance(1000 * time.Hour)
	// The table is full of a live key: b overflows and gets a lease on the
	// shared overflow state.
	b := acquire(t, lim, "b", 2)
	if !b.Overflow || a.Overflow {
		t.Fatalf("overflow: a %v, b %v; want only b", a.Overflow, b.Overflow)
	}
	if d := refused(t, lim, "c", 1); !d.Overflow || d.RetryAfter != time.Second {
		t.Fatalf("c: %+v, want an overflow refusal with RetryAfter 1s", d)
	}
	refused(t, lim, "a", 1)
	// The overflow lease gives its units back to the overflow state.
	if err := b.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "c", 2); !d.Overflow {
		t.Fatalf("c after b's release: %+v, want an overflow admission", d)
	} else {
		d.Lease.Release(ctx)
	}
	// a released: idle, so the next new key takes its place.
	a.Lease.Release(ctx)
	if d := acquire(t, lim, "d", 1); d.Overflow || d.Remaining != 1 {
		t.Fatalf("d after a's release: %+v, want a tracked admission", d)
	}
	if lim.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", lim.Len())
	}
	// a starts over: it was dropped, and its quota is whole.
	if d := allow(t, lim, "a", 2); !d.Allowed || !d.Overflow {
		t.Fatalf("a: %+v, want an overflow admission (d holds the table)", d)
	}
}

// TestConcurrencyEvictedLeases: under FullEvictLRU a key in flight can be
// evicted; its old leases then give nothing to the key tracked afresh.
func TestConcurrencyEvictedLeases(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 1, core.WithCapacity(1), core.WithFullPolicy(core.FullEvictLRU))
	old := acquire(t, lim, "a", 1)
	acquire(t, lim, "b", 1) // evicts a
	acquire(t, lim, "a", 1) // a afresh, evicting b
	if err := old.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// The new a still holds its unit.
	refused(t, lim, "a", 1)
}

func TestConcurrencyRefund(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 3)
	acquire(t, lim, "k", 3)
	if err := lim.Refund(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "k", 2); d.Remaining != 0 {
		t.Fatalf("remaining %d, want 0", d.Remaining)
	}
	// Never below zero: a refund of more than is held leaves none held.
	if err := lim.Refund(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	if err := lim.Refund(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "k", 1); d.Remaining != 2 {
		t.Fatalf("remaining %d, want 2", d.Remaining)
	}
}

// TestConcurrencyAllocs: an admission, a release and a refusal allocate
// nothing (a Lease's record is recycled; the race detector makes the pool
// drop some, so only a refusal is counted then).
func TestConcurrencyAllocs(t *testing.T) {
	lim := newInFlight(t, 1)
	if n := testing.AllocsPerRun(1000, func() {
		d, _ := lim.Allow(ctx, "k", 1)
		d.Lease.Release(ctx)
	}); n != 0 && !coretest.Race {
		t.Fatalf("admission and release: %v allocations, want 0", n)
	}
	acquire(t, lim, "k", 1)
	if n := testing.AllocsPerRun(1000, func() { lim.Allow(ctx, "k", 1) }); n != 0 {
		t.Fatalf("refusal: %v allocations, want 0", n)
	}
}

// FuzzConcurrency plays acquisitions, releases (some twice) and refunds on
// a few keys against a model that counts the units each key holds, and
// requires every decision to match it: admitted exactly when the cost
// fits, Remaining the units free, RetryAfter and ResetAfter the Period.
//
// Each step is 2 bytes: an operation and key, and a cost or lease index.
// Eviction and the overflow state are left to the other tests: the keys
// here always fit.
func FuzzConcurrency(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 0, 2, 0, 1, 4, 0, 0, 1, 8, 0, 4, 0})
	f.Add(uint8(1), []byte{0, 0, 1, 0, 0, 0, 12, 5, 0, 0})
	f.Fuzz(func(t *testing.T, events uint8, steps []byte) {
		n := int(events%16) + 1
		// Room for far more keys than the three played: none is ever
		// dropped, so each keeps one state for the model to follow.
		lim, _ := newLimiter(t, core.InFlight(n).WithAlgorithm(core.Concurrency), core.WithCapacity(64))
		type lease struct {
			l    core.Lease
			key  int
			cost int
			done bool
		}
		var leases []lease
		var held [3]int
		for i := 0; i+2 <= len(steps) && i < 400; i += 2 {
			op, key, arg := steps[i]&3, int(steps[i]>>2)%3, int(steps[i+1])
			name := "k" + string(rune('0'+key))
			switch op {
			case 0, 1: // acquire
				cost := 1 + arg%n
				d, err := lim.Allow(ctx, name, cost)
				if err != nil {
					t.Fatal(err)
				}
				want := held[key]+cost <= n
				if d.Allowed != want || !d.Lease.IsZero() != want {
					t.Fatalf("step %d: %s holds %d of %d, cost %d: %+v", i/2, name, held[key], n, cost, d)
				}
				if want {
					held[key] += cost
					leases = append(leases, lease{d.Lease, key, cost, false})
				}
				if d.Remaining != n-held[key] || d.ResetAfter != time.Second || (!want && d.RetryAfter != time.Second) || (want && d.RetryAfter != 0) {
					t.Fatalf("step %d: %s holds %d of %d: %+v", i/2, name, held[key], n, d)
				}
			case 2: // release a lease, perhaps again
				if len(leases) == 0 {
					continue
				}
				l := &leases[arg%len(leases)]
				if err := l.l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if !l.done {
					l.done = true
					held[l.key] = max(0, held[l.key]-l.cost)
				}
			case 3: // refund
				cost := 1 + arg%n
				if err := lim.Refund(ctx, name, cost); err != nil {
					t.Fatal(err)
				}
				held[key] = max(0, held[key]-cost)
			}
		}
	})
}

// BenchmarkConcurrency is one admission and its release on a hot key:
// one allocation, the Lease.
func BenchmarkConcurrency(b *testing.B) {
	clk := coretest.NewClock(t0)
	lim := core.MustNew(core.InFlight(1000).WithAlgorithm(core.Concurrency), core.WithClock(clk))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d, _ := lim.Allow(ctx, "hot", 1)
			d.Lease.Release(ctx)
		}
	})
}

// TestLeaseEnding: an ending lease hears how its request ended, once:
// End's ending, or EndDone from Release; later calls of either do nothing.
func TestLeaseEnding(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		first func(l core.Lease) error
		want  core.Ending
	}{
		{"release", func(l core.Lease) error { return l.Release(ctx) }, core.EndDone},
		{"dropped", func(l core.Lease) error { return l.End(ctx, core.EndDropped) }, core.EndDropped},
		{"ignored", func(l core.Lease) error { return l.End(ctx, core.EndIgnored) }, core.EndIgnored},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []core.Ending
			l := core.NewLease(func(_ context.Context, e core.Ending) error {
				got = append(got, e)
				return nil
			})
			if err := tt.first(l); err != nil {
				t.Fatal(err)
			}
			_ = l.End(ctx, core.EndDropped)
			_ = l.Release(ctx)
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("endings heard %v, want [%v] once", got, tt.want)
			}
		})
	}
	// A lease that does not learn ignores the ending and releases once.
	n := 0
	l := core.NewLease(func(context.Context, core.Ending) error { n++; return nil })
	_ = l.End(ctx, core.EndDropped)
	_ = l.Release(ctx)
	if n != 1 {
		t.Fatalf("a plain lease released %d times, want 1", n)
	}
}
