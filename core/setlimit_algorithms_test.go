package core_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/core"
)

// TestSetLimitConcurrency: the units in flight are kept across a change,
// their leases give them back, and a key holding more than the new Events
// is refused with nothing left until enough come back.
func TestSetLimitConcurrency(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 3)
	a := acquire(t, lim, "k", 2)
	b := acquire(t, lim, "k", 1)
	two := core.InFlight(2)
	if err := lim.SetLimit(two); err != nil {
		t.Fatal(err)
	}
	if d := refused(t, lim, "k", 1); d.Remaining != 0 || d.Limit != two {
		t.Fatalf("3 held under 2: %+v", d)
	}
	if err := b.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d := refused(t, lim, "k", 1); d.Remaining != 0 {
		t.Fatalf("2 held under 2: %+v", d)
	}
	if err := a.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "k", 2); d.Remaining != 0 || d.Limit != two {
		t.Fatalf("none held under 2: %+v", d)
	}
	five := core.InFlight(5)
	if err := lim.SetLimit(five); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "k", 3); d.Remaining != 0 || d.Limit != five {
		t.Fatalf("2 held under 5: %+v", d)
	}
	refused(t, lim, "k", 1)
	if err := lim.SetLimit(core.InFlight(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(ctx, "k", 2); !errors.Is(err, core.ErrCostTooLarge) {
		t.Fatalf("cost 2 under InFlight(1): %v, want ErrCostTooLarge", err)
	}
}

// TestSetLimitConcurrencyGenerations: the policies a limiter has had share
// one generation counter, so a lease of a key evicted before the change
// gives nothing to the key tracked afresh after it.
func TestSetLimitConcurrencyGenerations(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 1, core.WithCapacity(1), core.WithFullPolicy(core.FullEvictLRU))
	old := acquire(t, lim, "a", 1) // the first generation
	acquire(t, lim, "b", 1)        // evicts a
	if err := lim.SetLimit(core.InFlight(2)); err != nil {
		t.Fatal(err)
	}
	acquire(t, lim, "a", 2) // a afresh, evicting b: a generation of its own
	if err := old.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	refused(t, lim, "a", 1)
}

// TestSetLimitConcurrencyRace flips the limit between 2 and 4 units while
// goroutines take and release leases of one key (run it with -race). No
// admission may leave more units in flight than the larger limit, and once
// all are released the key holds none.
func TestSetLimitConcurrencyRace(t *testing.T) {
	t.Parallel()
	lim := newInFlight(t, 4)
	var held atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				d, err := lim.Allow(ctx, "k", 1)
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Allowed {
					continue
				}
				if n := held.Add(1); n > 4 {
					t.Errorf("%d units in flight", n)
				}
				held.Add(-1)
				d.Lease.Release(ctx)
			}
		}()
	}
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			lim.SetLimit(core.InFlight(2 + 2*(i%2)))
		}
	}()
	wg.Wait()
	close(stop)
	<-flipped
	if err := lim.SetLimit(core.InFlight(4)); err != nil {
		t.Fatal(err)
	}
	if d := acquire(t, lim, "k", 4); d.Remaining != 0 {
		t.Fatalf("after every release: %+v", d)
	}
}

// TestSetLimitExtendedRefused: the algorithms that keep per-key logs refuse
// a change, and keep deciding under their limit.
func TestSetLimitExtendedRefused(t *testing.T) {
	t.Parallel()
	for name, l := range map[string]core.Limit{
		"sliding-log": core.PerSecond(2).WithAlgorithm(core.SlidingLog),
		"sub-windows": core.PerSecond(2).WithSubWindows(4),
	} {
		t.Run(name, func(t *testing.T) {
			lim, _ := newLimiter(t, l)
			allow(t, lim, "k", 2)
			err := lim.SetLimit(core.PerSecond(10).WithAlgorithm(l.Algorithm))
			if !errors.Is(err, core.ErrSetLimitUnsupported) {
				t.Fatalf("SetLimit: %v, want ErrSetLimitUnsupported", err)
			}
			t.Log(err)
			if lim.Limit() != l {
				t.Fatalf("limit %v after a refused change", lim.Limit())
			}
			if d := allow(t, lim, "k", 1); d.Allowed || d.Limit != l {
				t.Fatalf("after a refused change: %+v", d)
			}
			dyn, err := core.NewDynamic(func(string) core.Limit { return l })
			if err != nil {
				t.Fatal(err)
			}
			if _, err = dyn.Allow(ctx, "k", 1); !errors.Is(err, core.ErrSetLimitUnsupported) {
				t.Fatalf("Dynamic.Allow: %v, want ErrSetLimitUnsupported", err)
			}
			_, err = core.NewAdaptive(core.AdaptiveConfig{
				Low: l.WithBurst(1), High: l,
				Signal: func() float64 { return 0 }, LowMark: 0, HighMark: 1,
			})
			if !errors.Is(err, core.ErrSetLimitUnsupported) {
				t.Fatalf("NewAdaptive: %v, want ErrSetLimitUnsupported", err)
			}
		})
	}
}

// TestDynamicRefusesConcurrency: a Dynamic cannot move a key's units in
// flight between limits, since its leases give back to the old one.
func TestDynamicRefusesConcurrency(t *testing.T) {
	t.Parallel()
	dyn, err := core.NewDynamic(func(string) core.Limit { return core.InFlight(2) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Allow(ctx, "k", 1); !errors.Is(err, core.ErrSetLimitUnsupported) {
		t.Fatalf("Dynamic.Allow: %v, want ErrSetLimitUnsupported", err)
	}
}
