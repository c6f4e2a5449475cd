package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// renewals stands in for time.AfterFunc: it keeps the renewals a Limiter
// schedules, and the test fires them.
type renewals struct {
	mu      sync.Mutex
	pending []*renewal
}

type renewal struct {
	every   time.Duration
	f       func()
	stopped atomic.Bool
}

func (r *renewals) after(d time.Duration, f func()) func() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := &renewal{every: d, f: f}
	r.pending = append(r.pending, n)
	return func() bool { return !n.stopped.Swap(true) }
}

// fire runs every renewal scheduled and not stopped, as their timers
// would, and returns how many it ran.
func (r *renewals) fire() int {
	r.mu.Lock()
	due := r.pending
	r.pending = nil
	r.mu.Unlock()
	n := 0
	for _, x := range due {
		if !x.stopped.Swap(true) {
			x.f()
			n++
		}
	}
	return n
}

// inFlight returns a concurrency Limiter on c deciding at clk's time, with
// its renewals in r.
func inFlight(t *testing.T, c redis.UniversalClient, prefix string, n int, clk *coretest.Clock, r *renewals, opts ...redisstore.Option) *redisstore.Limiter {
	t.Helper()
	o := append([]redisstore.Option{redisstore.WithPrefix(prefix),
		redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithAfterFunc(r.after)}, opts...)
	lim, err := redisstore.New(c, core.InFlight(n), o...)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

func decide(t *testing.T, lim core.Limiter, key string, cost int, allowed bool, remaining int) core.Decision {
	t.Helper()
	d, err := lim.Allow(context.Background(), key, cost)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed != allowed || d.Remaining != remaining || !d.Lease.IsZero() != allowed {
		t.Fatalf("Allow(%q, %d) = %+v, want allowed=%v remaining=%d", key, cost, d, allowed, remaining)
	}
	return d
}

// TestLeaseExpires: an instance that dies holding leases (its client
// closed, its renewals never run) gives the slots back one TTL after they
// were taken, to the microsecond of the test clock; its release, once it
// can no longer reach Redis, reports the failure.
func TestLeaseExpires(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	dying := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	const ttl = 10 * time.Second
	a := inFlight(t, dying, "exp:", 2, clk, &r, redisstore.WithLeaseTTL(ttl))
	b := inFlight(t, c, "exp:", 2, clk, &r, redisstore.WithLeaseTTL(ttl))
	held := decide(t, a, "k", 2, true, 0)
	if got := r.pending[0].every; got != ttl/3 {
		t.Fatalf("renewal every %v, want %v", got, ttl/3)
	}
	clk.Advance(ttl / 2)
	decide(t, b, "k", 1, false, 0)
	// The key is a sorted set with a TTL: the lease's expiry plus the margin.
	rkey := b.Key("k")
	if typ := c.Type(context.Background(), rkey).Val(); typ != "zset" {
		t.Fatalf("%s is a %s, want a zset", rkey, typ)
	}
	if pttl := c.PTTL(context.Background(), rkey).Val(); pttl <= 0 || pttl > ttl+redisstore.DefaultTTLMargin {
		t.Fatalf("PTTL %v, want (0, %v]", pttl, ttl+redisstore.DefaultTTLMargin)
	}
	dying.Close() // the instance dies: no renewal, no release reaches Redis
	clk.Set(coretest.T0.Add(ttl - time.Microsecond))
	decide(t, b, "k", 1, false, 0)
	clk.Set(coretest.T0.Add(ttl))
	got := decide(t, b, "k", 2, true, 0)
	if err := held.Lease.Release(context.Background()); err == nil || !errors.Is(err, core.ErrStore) {
		t.Fatalf("release through a closed client: %v, want a store error", err)
	}
	// Released after its expiry by a live instance, the dead lease changes
	// nothing either: b's hold stands.
	a2 := inFlight(t, c, "exp:", 2, clk, &r, redisstore.WithLeaseTTL(ttl))
	decide(t, a2, "k", 1, false, 0)
	if err := got.Lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	decide(t, a2, "k", 2, true, 0).Lease.Release(context.Background())
	// Every lease released: the key is gone.
	if n := c.Exists(context.Background(), rkey).Val(); n != 0 {
		t.Fatalf("%s still exists after every release", rkey)
	}
}

// TestLeaseRenewal: a held lease renewed before it expires lives a TTL
// from the renewal; a renewal that comes after it expired brings nothing
// back, and stops.
func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	const ttl = 9 * time.Second
	a := inFlight(t, c, "renew:", 1, clk, &r, redisstore.WithLeaseTTL(ttl))
	b := inFlight(t, c, "renew:", 1, clk, &r, redisstore.WithLeaseTTL(ttl))
	held := decide(t, a, "k", 1, true, 0)
	for i := 1; i <= 3; i++ {
		clk.Advance(ttl / 3)
		if n := r.fire(); n != 1 {
			t.Fatalf("renewal %d: %d ran, want 1", i, n)
		}
		decide(t, b, "k", 1, false, 0)
	}
	// Renewed last at 9 s: held until 18 s.
	clk.Set(coretest.T0.Add(2*ttl - time.Microsecond))
	decide(t, b, "k", 1, false, 0)
	clk.Set(coretest.T0.Add(2 * ttl))
	other := decide(t, b, "k", 1, true, 0)
	// a's renewal due now finds its lease expired: it neither brings it
	// back nor schedules another; b's renews b's and schedules the next.
	if n := r.fire(); n != 2 {
		t.Fatalf("%d renewals ran, want a's and b's", n)
	}
	if len(r.pending) != 1 {
		t.Fatalf("%d renewals scheduled, want b's alone", len(r.pending))
	}
	decide(t, a, "k", 1, false, 0)
	if card := c.ZCard(context.Background(), b.Key("k")).Val(); card != 2 {
		t.Fatalf("the set holds %d members, want b's lease and the count", card)
	}
	// A released lease is renewed no more.
	held.Lease.Release(context.Background())
	other.Lease.Release(context.Background())
	if n := r.fire(); n != 0 {
		t.Fatalf("%d renewals of released leases ran", n)
	}
	decide(t, a, "k", 1, true, 0)
}

// TestLeaseRenewalTimer: with the real timers and the server's clock, a
// lease held for several TTLs is renewed in the background and still
// holds its slot. It sleeps (bounded, a second) since the renewals are
// real round trips on real time.
func TestLeaseRenewalTimer(t *testing.T) {
	t.Parallel()
	runAs(t, realTime)
	c := single(t)
	const ttl = 300 * time.Millisecond
	a := redisstore.MustNew(c, core.InFlight(1), redisstore.WithLeaseTTL(ttl), redisstore.WithTimeout(time.Second))
	held := decide(t, a, "k", 1, true, 0)
	time.Sleep(4 * ttl)
	decide(t, a, "k", 1, false, 0)
	if err := held.Lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	decide(t, a, "k", 1, true, 0).Lease.Release(context.Background())
}

// TestLeaseReleaseAfterCancel: a request whose context ended still gives
// its slot back.
func TestLeaseReleaseAfterCancel(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	lim := inFlight(t, c, "cancel:", 1, clk, &r)
	ctx, cancel := context.WithCancel(context.Background())
	d, err := lim.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	cancel()
	if err := d.Lease.Release(ctx); err != nil {
		t.Fatalf("release with an ended context: %v", err)
	}
	decide(t, lim, "k", 1, true, 0)
}

// TestConcurrencyRefund: Refund lowers the units held, never below none,
// and leaves the leases as they are: releasing one afterwards takes
// nothing below zero either.
func TestConcurrencyRefund(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	lim := inFlight(t, c, "refund:", 3, clk, &r)
	ctx := context.Background()
	first := decide(t, lim, "k", 2, true, 1)
	decide(t, lim, "k", 1, true, 0)
	if err := lim.Refund(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	decide(t, lim, "k", 2, true, 0)
	if err := lim.Refund(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	first.Lease.Release(ctx)
	decide(t, lim, "k", 1, true, 2)
}

// TestConcurrencyExactAdmission: four instances with 32 goroutines each,
// on the server's clock, hold exactly the limit at once; once every lease
// is released, the whole limit is free again.
func TestConcurrencyExactAdmission(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	const n = 50
	var admitted atomic.Int64
	var wg sync.WaitGroup
	leases := make(chan core.Lease, 4*32)
	prefix := fmt.Sprintf("x%d:", rand.Uint64())
	var lims []*redisstore.Limiter
	for range 4 {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 32, ContextTimeoutEnabled: true})
		defer c.Close()
		lim := redisstore.MustNew(c, core.InFlight(n), redisstore.WithPrefix(prefix), redisstore.WithTimeout(5*time.Second))
		lims = append(lims, lim)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := lim.Allow(context.Background(), "hot", 1)
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
	}
	wg.Wait()
	close(leases)
	if got := admitted.Load(); got != n {
		t.Fatalf("admitted %d of 128, want exactly %d", got, n)
	}
	for l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Release(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	decide(t, lims[0], "hot", 1, true, n-1).Lease.Release(context.Background())
}

// TestConcurrencyOptions: WithLeaseTTL is checked at construction.
func TestConcurrencyOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, tc := range []struct {
		opts []redisstore.Option
		want string
	}{
		{[]redisstore.Option{redisstore.WithLeaseTTL(time.Millisecond)}, "from 3ms"},
		{[]redisstore.Option{redisstore.WithLeaseTTL(-time.Second)}, "from 3ms"},
	} {
		if _, err := redisstore.New(c, core.InFlight(2), tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.opts, err, tc.want)
		}
	}
	lim, err := redisstore.New(c, core.InFlight(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := lim.Key("k"); got != "floodgate:{k}:cc:2/1000000000:2" {
		t.Errorf("Key = %q", got)
	}
}

// TestConcurrencyTTLRepair: a key found without a TTL (a manual write, a
// restore) gets one from its next decision, a refusal included.
func TestConcurrencyTTLRepair(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	lim := inFlight(t, c, "repair:", 1, clk, &r, redisstore.WithLeaseTTL(time.Minute))
	decide(t, lim, "k", 1, true, 0)
	ctx := context.Background()
	rkey := lim.Key("k")
	if !c.Persist(ctx, rkey).Val() {
		t.Fatal("PERSIST failed")
	}
	decide(t, lim, "k", 1, false, 0)
	if pttl := c.PTTL(ctx, rkey).Val(); pttl <= 0 || pttl > time.Minute+redisstore.DefaultTTLMargin {
		t.Fatalf("PTTL %v after a refusal, want (0, %v]", pttl, time.Minute+redisstore.DefaultTTLMargin)
	}
}

// BenchmarkConcurrencyRedis is one admission and its release on a local
// redis-server, sequential: two round trips. Compare with a GCRA decision,
// one round trip.
func BenchmarkConcurrencyRedis(b *testing.B) {
	s := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	ctx := context.Background()
	b.Run("acquire+release", func(b *testing.B) {
		lim := redisstore.MustNew(c, core.InFlight(1000))
		b.ReportAllocs()
		for b.Loop() {
			d, err := lim.Allow(ctx, "hot", 1)
			if err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
			if err := d.Lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gcra", func(b *testing.B) {
		lim := redisstore.MustNew(c, core.PerSecond(1e9).WithAlgorithm(core.GCRA))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := lim.Allow(ctx, "hot", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConcurrencyMatchesMemory plays random acquisitions, releases (some
// twice) and refunds on three keys, on the in-memory limiter and on Redis
// at the same fake instants, and requires the same decision from both
// while no lease expires.
func TestConcurrencyMatchesMemory(t *testing.T) {
	t.Parallel()
	c := single(t)
	r := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	for _, l := range []core.Limit{core.InFlight(1), core.InFlight(5), {Events: 40, Period: 1500 * time.Millisecond}} {
		t.Run(l.String(), func(t *testing.T) {
			clk := coretest.NewClock(coretest.T0)
			mem, err := core.New(l.WithAlgorithm(core.Concurrency), core.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			// Leases outlive the test's five minutes of fake time: in
			// memory, nothing expires.
			red := factory(c, redisstore.WithLeaseTTL(time.Hour))(t, coretest.Table{Limit: l.WithAlgorithm(core.Concurrency)}, clk)
			type pair struct{ mem, red core.Lease }
			var held []pair
			for i := 0; i < 300; i++ {
				clk.Advance(time.Duration(r.Int64N(int64(time.Second))))
				key := fmt.Sprint("k", r.IntN(3))
				switch n := r.IntN(10); {
				case n < 3 && len(held) > 0:
					p := held[r.IntN(len(held))]
					if err := p.mem.Release(ctx); err != nil {
						t.Fatal(err)
					}
					if err := p.red.Release(ctx); err != nil {
						t.Fatal(err)
					}
				case n == 3:
					cost := 1 + r.IntN(l.Events)
					refundBoth(t, mem, red, key, cost)
				default:
					cost := 1 + r.IntN(min(l.Events, 3))
					got, want := allowBoth(t, mem, red, key, cost)
					if got.Allowed {
						held = append(held, pair{want.Lease, got.Lease})
					}
					got.Lease, want.Lease = core.Lease{}, core.Lease{}
					if got != want {
						t.Fatalf("step %d, %s cost %d:\nredis  %+v\nmemory %+v", i, key, cost, got, want)
					}
				}
			}
		})
	}
}
