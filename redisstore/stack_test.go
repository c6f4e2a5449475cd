package redisstore_test

import (
	"context"
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
	"github.com/floodgate/floodgate/redisstore"
)

// stackFactory makes Redis stacks deciding at the fake clock's time.
func stackFactory(c redis.UniversalClient, opts ...redisstore.Option) coretest.StackFactory {
	return func(t testing.TB, tab coretest.StackTable, clk *coretest.Clock) core.Limiter {
		var layers []core.Limit
		for _, l := range tab.Layers {
			layers = append(layers, l.Limit)
		}
		// Leases in memory never expire: here they outlive every table's
		// fake time.
		o := append([]redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64())), redisstore.WithTimeout(5 * time.Second),
			redisstore.WithLeaseTTL(time.Hour)}, opts...)
		s, err := redisstore.NewStack(c, layers, o...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestStackTables: the shared stack tables pass exactly on a single server
// and on a Cluster, with the deny cache on and off.
func TestStackTables(t *testing.T) {
	t.Parallel()
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		for _, tab := range coretest.StackTables() {
			for _, size := range []int{0, redisstore.DefaultDenyCacheSize} {
				t.Run(fmt.Sprintf("%s/cache=%d", tab.Name, size), func(t *testing.T) {
					coretest.RunStack(t, tab, stackFactory(c, redisstore.WithDenyCache(size)), 0)
				})
			}
		}
	})
}

// TestStackMatchesMemory plays random traffic on stacks of every pair of
// algorithms (sub-windows and concurrency included) in memory and on Redis
// at the same fake instants and requires the same decisions, refunds and
// lease releases included.
func TestStackMatchesMemory(t *testing.T) {
	t.Parallel()
	runAs(t, busy)
	c := single(t)
	// The kinds are policies without a rate: each pair gets the rates below.
	kinds := []core.Limit{
		{Algorithm: core.TokenBucket}, {Algorithm: core.GCRA}, {Algorithm: core.FixedWindow},
		{Algorithm: core.SlidingWindow}, {Algorithm: core.SlidingWindow, SubWindows: 5},
		{Algorithm: core.SlidingLog}, {Algorithm: core.LeakyBucket}, {Algorithm: core.Concurrency},
	}
	name := func(k core.Limit) string {
		if k.SubWindows != 0 {
			return fmt.Sprintf("sub-windows-%d", k.SubWindows)
		}
		return k.Algorithm.String()
	}
	rated := func(k, rate core.Limit) coretest.Table {
		rate.Algorithm, rate.SubWindows = k.Algorithm, k.SubWindows
		return coretest.Table{Limit: rate}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, a := range kinds {
		for _, b := range kinds {
			t.Run(name(a)+"+"+name(b), func(t *testing.T) {
				tab := coretest.StackTable{Layers: []coretest.Table{
					rated(a, core.PerSecond(7).WithBurst(4).WithName("fast")),
					rated(b, core.Limit{Events: 12, Period: 5 * time.Second, Burst: 6, Name: "slow"}),
				}}
				clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
				var layers []core.Limit
				for _, l := range tab.Layers {
					layers = append(layers, l.Limit)
				}
				mem, err := core.NewStack(layers, core.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				red := stackFactory(c)(t, tab, clk)
				ctx := context.Background()
				var held [][2]core.Lease // memory's and Redis's lease of one admission
				defer func() {
					for _, h := range held {
						_, _ = h[0].Release(ctx), h[1].Release(ctx)
					}
				}()
				for i := 0; i < shortSteps(300); i++ {
					switch r.IntN(4) {
					case 0:
						clk.Advance(time.Duration(r.Int64N(1000)))
					case 1:
						clk.Advance(time.Duration(r.Int64N(int64(300 * time.Millisecond))))
					}
					key := fmt.Sprintf("k%d", r.IntN(2))
					cost := 1 + r.IntN(4)
					if len(held) > 0 && r.IntN(4) == 0 {
						j := r.IntN(len(held))
						e1, e2 := held[j][0].Release(ctx), held[j][1].Release(ctx)
						if e1 != nil || e2 != nil {
							t.Fatalf("step %d release: memory %v, redis %v", i, e1, e2)
						}
						held = append(held[:j], held[j+1:]...)
						continue
					}
					if r.IntN(8) == 0 {
						e1, e2 := mem.Refund(ctx, key, cost), red.Refund(ctx, key, cost)
						if (e1 == nil) != (e2 == nil) {
							t.Fatalf("step %d refund: memory %v, redis %v", i, e1, e2)
						}
						continue
					}
					d1, e1 := mem.Allow(ctx, key, cost)
					d2, e2 := red.Allow(ctx, key, cost)
					if d1.Lease.IsZero() != d2.Lease.IsZero() {
						t.Fatalf("step %d %s cost %d: memory's lease %v, redis's %v", i, key, cost, d1.Lease, d2.Lease)
					}
					if !d1.Lease.IsZero() {
						held = append(held, [2]core.Lease{d1.Lease, d2.Lease})
					}
					d1.Lease, d2.Lease = core.Lease{}, core.Lease{}
					if (e1 == nil) != (e2 == nil) || d1 != d2 {
						t.Fatalf("step %d %s cost %d:\nmemory %+v %v\n redis %+v %v", i, key, cost, d1, e1, d2, e2)
					}
				}
			})
		}
	}
}

// TestStackAllOrNothing: many goroutines on one key; the stack admits
// exactly its tightest layer's quota, and each layer's own key holds
// exactly what was admitted.
func TestStackAllOrNothing(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	s, err := redisstore.NewStack(c, []core.Limit{
		core.PerMinute(100),
		core.PerMinute(40).WithAlgorithm(core.FixedWindow),
	}, redisstore.WithScriptClock(clk), redisstore.WithClock(clk), redisstore.WithPrefix("aon:"),
		// 128 calls at once on a busy machine under -race: a long timeout,
		// which changes no decision.
		redisstore.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if d, err := s.Allow(context.Background(), "k", 1); err == nil && d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 40 {
		t.Fatalf("%d admitted, want 40", n)
	}
	keys := s.Keys("k")
	if len(keys) != 2 || !strings.HasPrefix(keys[0], "aon:{k}:tb:") || !strings.HasPrefix(keys[1], "aon:{k}:fw:") {
		t.Fatalf("keys %q", keys)
	}
	// The token bucket's own state, read by a Limiter on the same key:
	// 60 of 100 left.
	one := redisstore.MustNew(c, core.PerMinute(100), redisstore.WithScriptClock(clk), redisstore.WithPrefix("aon:"))
	if d, err := one.Allow(context.Background(), "k", 1); err != nil || d.Remaining != 59 {
		t.Fatalf("token-bucket layer after the stack: %+v %v, want 59 left", d, err)
	}
}

func TestNewStackErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, tc := range []struct {
		layers []core.Limit
		want   string
	}{
		{nil, "at least one limit"},
		{[]core.Limit{core.PerSecond(1), core.PerSecond(1)}, `both named "1-per-s"`},
		{[]core.Limit{{Events: 1}}, "period must be > 0"},
		{[]core.Limit{core.PerSecond(1).WithMaxDelay(time.Second).WithAlgorithm(core.GCRA)}, "MaxDelay applies to LeakyBucket only"},
		{[]core.Limit{core.PerDay(1).WithBurst(100)}, "may span at most"},
	} {
		if _, err := redisstore.NewStack(c, tc.layers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewStack(%v): %v, want %q", tc.layers, err, tc.want)
		}
	}
	if _, err := redisstore.NewStack(nil, []core.Limit{core.PerSecond(1)}); err == nil {
		t.Error("nil client accepted")
	}
}

// TestStackLeases: a stack with a concurrency layer hands out leases that
// every concurrency layer holds, renews them through the stack's script,
// lets them expire when their instance dies, and gives them back on
// release; its other layers are charged by admissions alone.
func TestStackLeases(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	var r renewals
	const ttl = 9 * time.Second
	newStack := func() *redisstore.Stack {
		s, err := redisstore.NewStack(c, []core.Limit{
			core.InFlight(1).WithName("inflight"),
			core.PerHour(100).WithName("hourly").WithAlgorithm(core.FixedWindow),
		}, redisstore.WithPrefix("stacklease:"), redisstore.WithLeaseTTL(ttl), redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithAfterFunc(r.after), redisstore.WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newStack(), newStack()
	refused := func(s *redisstore.Stack) {
		t.Helper()
		d := decide(t, s, "k", 1, false, 0)
		if d.Limit.Name != "inflight" || d.RetryAfter != time.Second {
			t.Fatalf("refusal %+v, want one naming inflight with its 1 s hint", d)
		}
	}
	held := decide(t, a, "k", 1, true, 0)
	if got := r.pending[0].every; got != ttl/3 {
		t.Fatalf("renewal every %v, want %v", got, ttl/3)
	}
	for i := 1; i <= 3; i++ {
		clk.Advance(ttl / 3)
		if n := r.fire(); n != 1 {
			t.Fatalf("renewal %d: %d ran, want 1", i, n)
		}
		refused(b)
	}
	// Renewed last at 9 s: held until 18 s, then given back by itself (a
	// dies: its renewals stop).
	clk.Set(coretest.T0.Add(2*ttl - time.Microsecond))
	refused(b)
	clk.Set(coretest.T0.Add(2 * ttl))
	other := decide(t, b, "k", 1, true, 0)
	// a's renewal finds its lease gone and stops; b's goes on.
	if n := r.fire(); n != 2 || len(r.pending) != 1 {
		t.Fatalf("%d renewals ran and %d are scheduled, want 2 and b's alone", n, len(r.pending))
	}
	// a's late release changes nothing: b's lease stands.
	if err := held.Lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	refused(a)
	if err := other.Lease.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := a.Keys("k")
	if n := c.Exists(context.Background(), keys[0]).Val(); n != 0 {
		t.Fatalf("%s still exists after every release", keys[0])
	}
	// The hourly layer counted the two admissions alone: 98 left, 97
	// after one more, as a Limiter of its own on the same key reads it.
	one := redisstore.MustNew(c, core.PerHour(100).WithName("hourly").WithAlgorithm(core.FixedWindow),
		redisstore.WithPrefix("stacklease:"), redisstore.WithScriptClock(clk))
	if d, err := one.Allow(context.Background(), "k", 1); err != nil || d.Remaining != 97 {
		t.Fatalf("hourly layer after the stack: %+v %v, want 97 left", d, err)
	}
}

// TestStackConcurrencyAllOrNothing: many goroutines on one key of a stack
// whose concurrency layer is the tightest: exactly its units are admitted,
// the other layer is charged for those alone, and releasing every lease
// empties the concurrency layer.
func TestStackConcurrencyAllOrNothing(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	s, err := redisstore.NewStack(c, []core.Limit{
		core.PerHour(100).WithName("hourly").WithAlgorithm(core.FixedWindow),
		core.InFlight(5),
	}, redisstore.WithScriptClock(clk), redisstore.WithClock(clk), redisstore.WithPrefix("aonc:"),
		redisstore.WithTimeout(5*time.Second)) // as TestStackAllOrNothing's
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var leases []core.Lease
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				d, err := s.Allow(context.Background(), "k", 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					leases = append(leases, d.Lease)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(leases) != 5 {
		t.Fatalf("%d admitted, want 5", len(leases))
	}
	for _, l := range leases {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Exists(context.Background(), s.Keys("k")[1]).Val(); n != 0 {
		t.Fatal("the concurrency layer's key outlives every release")
	}
	one := redisstore.MustNew(c, core.PerHour(100).WithAlgorithm(core.FixedWindow),
		redisstore.WithPrefix("aonc:"), redisstore.WithScriptClock(clk))
	if d, err := one.Allow(context.Background(), "k", 1); err != nil || d.Remaining != 94 {
		t.Fatalf("hourly layer after the stack: %+v %v, want 94 left", d, err)
	}
}
