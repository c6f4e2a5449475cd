package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestQuotaInstantBurst: one instance with local quota, 300 calls at once
// on a frozen clock (from one goroutine, and from 32) on a limit of 100 a
// second with a burst of 100: exactly the burst is admitted, as a shared
// limiter admits it. A lease is replaced only once it cannot pay a call, so no
// unit goes back to Redis after the grant that would have needed it
// (before, the refill at a quarter replaced the lease, and its last units
// came back after the key had been found empty: 81 to 91 admitted).
func TestQuotaInstantBurst(t *testing.T) {
	c := single(t)
	for _, tc := range []struct {
		alg        core.Algorithm
		goroutines int
	}{
		{core.GCRA, 1}, {core.TokenBucket, 1}, {core.FixedWindow, 1},
		{core.GCRA, 32}, {core.TokenBucket, 32}, {core.FixedWindow, 32},
	} {
		alg := tc.alg
		t.Run(fmt.Sprintf("%v/%d", alg, tc.goroutines), func(t *testing.T) {
			l := core.Limit{Events: 100, Period: time.Second, Burst: 100, Algorithm: alg}
			if alg == core.FixedWindow {
				l.Burst = 0
			}
			r := newQuotaRig(t, c, l, 1, 0, 0)
			var admitted, leased atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, tc.goroutines)
			for g := range tc.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := 300 / tc.goroutines
					if g < 300%tc.goroutines {
						n++ // 300 calls in all
					}
					for range n {
						d, err := r.all[0].Allow(context.Background(), "k", 1)
						if err != nil {
							errs <- err
							return
						}
						if d.Allowed {
							admitted.Add(1)
						}
						if d.Leased {
							leased.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			r.settle()
			if n := admitted.Load(); n != 100 {
				t.Fatalf("%d of 300 calls admitted at once, want the burst, 100 (%s)", n, counts(r.lims[0]))
			}
			if leased.Load() < 150 {
				t.Fatalf("%d decisions from leases, want most of the 300 (%s)", leased.Load(), counts(r.lims[0]))
			}
		})
	}
}

// TestQuotaWindowRefusalHolds: with local quota, a fixed window that
// refused here stays refused to the window's end, as exact mode's deny
// cache keeps it, even if Redis loses the window's count meanwhile (a
// restart; here FLUSHDB): before, the instance asked again a lease's
// length later, and the empty state granted the window over.
func TestQuotaWindowRefusalHolds(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	l := core.Limit{Events: 20, Period: time.Minute, Algorithm: core.FixedWindow}
	r := newQuotaRig(t, c, l, 1, 0, 0)
	r.clk.Set(coretest.T0.Truncate(time.Minute)) // a window's start
	admitted := func(n int) int {
		got := 0
		for range n {
			if r.allow(0, "k").Allowed {
				got++
			}
		}
		return got
	}
	if got := admitted(30); got != 20 {
		t.Fatalf("the first window admitted %d of 30, want 20", got)
	}
	r.settle()
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r.clk.Advance(30 * time.Second) // 30 leases later, the same window
	if got := admitted(30); got != 0 {
		t.Fatalf("after Redis lost the count, the same window admitted %d more, want 0", got)
	}
	r.clk.Advance(30 * time.Second) // the next window
	r.fire()
	if got := admitted(30); got != 20 {
		t.Fatalf("the next window admitted %d of 30, want 20", got)
	}
}

// TestQuotaAskAhead: a hot key refused because nothing fit, not even
// within a grant ahead's half lease (a lease of 6 ms here), has its next
// lease asked for when its units will, in the background, so that the
// next call is decided from it without a round trip (at a burst of 1 the
// refill would cap and be lost while no call came). GCRA, 200 a second,
// burst 1: a unit every 5 ms.
func TestQuotaAskAhead(t *testing.T) {
	c := single(t)
	l := core.Limit{Events: 200, Period: time.Second, Burst: 1, Algorithm: core.GCRA}
	r := newQuotaRig(t, c, l, 1, 6*time.Millisecond, 1)
	lim := r.lims[0]
	if d := r.allow(0, "k"); !d.Allowed || !d.Leased {
		t.Fatalf("the first call: %+v, want admitted from its lease of 1", d)
	}
	if d := r.allow(0, "k"); d.Allowed || d.RetryAfter != 5*time.Millisecond {
		t.Fatalf("the second: %+v, want refused by the grant, for the 5 ms until a unit fits", d)
	}
	if g, _, _ := redisstore.QuotaCounts(lim); g != 2 {
		t.Fatalf("%s, want two grants", counts(lim))
	}
	r.clk.Advance(5 * time.Millisecond)
	r.fire() // the grant asked ahead
	if g, _, _ := redisstore.QuotaCounts(lim); g != 3 {
		t.Fatalf("when the unit fits: %s, want a third grant, asked ahead", counts(lim))
	}
	r.clk.Advance(3 * time.Millisecond) // the next call comes later
	store := lim.Health().StoreDecisions
	if d := r.allow(0, "k"); !d.Allowed || !d.Leased {
		t.Fatalf("the later call: %+v, want admitted from the lease asked ahead", d)
	}
	if g, _, _ := redisstore.QuotaCounts(lim); g != 3 || lim.Health().StoreDecisions != store {
		t.Fatalf("the later call: %s, want no round trip", counts(lim))
	}
}

// TestQuotaGrantAhead: a hot key whose grant finds no unit fits now takes
// the next one due (within half a lease), charged at once and spent from
// when it is due, so that a burst of 1 loses none of its refill to the
// round trip that asks for each unit. GCRA and token bucket, 200 a
// second, burst 1, leases of 100 ms: a unit every 5 ms.
func TestQuotaGrantAhead(t *testing.T) {
	c := single(t)
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			l := core.Limit{Events: 200, Period: time.Second, Burst: 1, Algorithm: alg}
			r := newQuotaRig(t, c, l, 1, 0, 1)
			lim := r.lims[0]
			if d := r.allow(0, "k"); !d.Allowed || !d.Leased {
				t.Fatalf("the first call: %+v, want admitted from its lease of 1", d)
			}
			d := r.allow(0, "k")
			if d.Allowed || !d.Leased || d.RetryAfter != 5*time.Millisecond {
				t.Fatalf("the second: %+v, want refused from the lease granted ahead, for the 5 ms until its unit is due", d)
			}
			if g, _, _ := redisstore.QuotaCounts(lim); g != 2 || lim.Health().StoreDecisions != 0 {
				t.Fatalf("%s, want two grants and no decision of the store", counts(lim))
			}
			r.clk.Advance(4 * time.Millisecond)
			if d := r.allow(0, "k"); d.Allowed || d.RetryAfter != time.Millisecond {
				t.Fatalf("1 ms before the unit is due: %+v, want refused for 1 ms", d)
			}
			r.clk.Advance(time.Millisecond)
			if d := r.allow(0, "k"); !d.Allowed || !d.Leased {
				t.Fatalf("when the unit is due: %+v, want admitted from the lease", d)
			}
			r.settle()
			if g, _, _ := redisstore.QuotaCounts(lim); g != 3 || lim.Health().StoreDecisions != 0 {
				t.Fatalf("%s, want a third grant, asked in the background once the unit was spent (askNext)", counts(lim))
			}
			// The units charged ahead are charged: an instance to which
			// the key is cold (its calls decided in Redis) finds none
			// left, and none for 10 ms (the unit just spent, and the
			// next, due in 5 ms, held by the lease asked in the
			// background).
			plain, err := redisstore.New(c, l, r.options(0, 1<<20)...)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := plain.Allow(context.Background(), "k", 1); err != nil || d.Allowed || d.RetryAfter < 10*time.Millisecond-time.Microsecond || d.RetryAfter > 10*time.Millisecond {
				t.Fatalf("exact mode, when the lease's unit has just been spent: %+v, %v; want refused for 10 ms (a token bucket's float: a few ns less)", d, err)
			}
			// A call every millisecond for a second, from a unit due in
			// 5 ms: as many as core admits on the same calls, with one
			// grant per unit. Each step waits for the grant asked in the
			// background (a round trip well under the 5 ms to the next
			// unit): the fake clock would otherwise run ahead of it on a
			// busy machine.
			ref, err := core.New(l, core.WithClock(r.clk))
			if err != nil {
				t.Fatal(err)
			}
			r.clk.Advance(5 * time.Millisecond)
			// The unit that was due is spent in both.
			if d, _ := ref.Allow(context.Background(), "k", 1); !d.Allowed || !r.allow(0, "k").Allowed {
				t.Fatal("the unit due was not spent")
			}
			r.settle()
			g0, _, _ := redisstore.QuotaCounts(lim)
			got, want := 0, 0
			for range 1000 {
				r.clk.Advance(time.Millisecond)
				if r.allow(0, "k").Allowed {
					got++
				}
				r.settle()
				if d, _ := ref.Allow(context.Background(), "k", 1); d.Allowed {
					want++
				}
			}
			g1, _, _ := redisstore.QuotaCounts(lim)
			if got != want || want != 200 {
				t.Fatalf("a call a millisecond for a second: %d admitted, core %d; want 200", got, want)
			}
			if g1-g0 > uint64(want)+1 {
				t.Fatalf("%d grants for %d admitted, want one per unit", g1-g0, got)
			}
		})
	}
}
