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
	"github.com/floodgate/floodgate/core/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// stackFactory makes Redis stacks deciding at the fake clock's time.
func stackFactory(c redis.UniversalClient, opts ...redisstore.Option) coretest.StackFactory {
	return func(t testing.TB, tab coretest.StackTable, clk *coretest.Clock) core.Limiter {
		var layers []redisstore.Layer
		for _, l := range tab.Layers {
			layers = append(layers, redisstore.Layer{Limit: l.Limit, Options: []redisstore.Option{redisstore.WithAlgorithm(l.Algorithm)}})
		}
		o := append([]redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(fmt.Sprintf("t%d:", rand.Uint64()))}, opts...)
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

// TestStackMatchesMemory plays random traffic on stacks of every algorithm
// pair in memory and on Redis at the same fake instants and requires the
// same decisions, refunds included.
func TestStackMatchesMemory(t *testing.T) {
	c := single(t)
	algs := []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow, core.LeakyBucket}
	r := rand.New(rand.NewPCG(3, 4))
	for _, a := range algs {
		for _, b := range algs {
			t.Run(fmt.Sprintf("%v+%v", a, b), func(t *testing.T) {
				tab := coretest.StackTable{Layers: []coretest.Table{
					{Algorithm: a, Limit: core.PerSecond(7).WithBurst(4).WithName("fast")},
					{Algorithm: b, Limit: core.Limit{Events: 12, Period: 5 * time.Second, Burst: 6, Name: "slow"}},
				}}
				clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
				var layers []core.Layer
				for _, l := range tab.Layers {
					layers = append(layers, core.Layer{Limit: l.Limit, Options: l.CoreOptions()})
				}
				mem, err := core.NewStack(layers, core.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				red := stackFactory(c)(t, tab, clk)
				ctx := context.Background()
				for i := 0; i < 300; i++ {
					switch r.IntN(4) {
					case 0:
						clk.Advance(time.Duration(r.Int64N(1000)))
					case 1:
						clk.Advance(time.Duration(r.Int64N(int64(300 * time.Millisecond))))
					}
					key := fmt.Sprintf("k%d", r.IntN(2))
					cost := 1 + r.IntN(4)
					if r.IntN(8) == 0 {
						e1, e2 := mem.Refund(ctx, key, cost), red.Refund(ctx, key, cost)
						if (e1 == nil) != (e2 == nil) {
							t.Fatalf("step %d refund: memory %v, redis %v", i, e1, e2)
						}
						continue
					}
					d1, e1 := mem.Allow(ctx, key, cost)
					d2, e2 := red.Allow(ctx, key, cost)
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
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	s, err := redisstore.NewStack(c, []redisstore.Layer{
		{Limit: core.PerMinute(100)},
		{Limit: core.PerMinute(40), Options: []redisstore.Option{redisstore.WithAlgorithm(core.FixedWindow)}},
	}, redisstore.WithScriptClock(clk), redisstore.WithClock(clk), redisstore.WithPrefix("aon:"))
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
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		layers []redisstore.Layer
		want   string
	}{
		{nil, "at least one layer"},
		{[]redisstore.Layer{{Limit: core.PerSecond(1)}, {Limit: core.PerSecond(1)}}, `both named "1-per-1s"`},
		{[]redisstore.Layer{{Limit: core.PerSecond(1), Options: []redisstore.Option{redisstore.WithPrefix("x:")}}}, "only WithAlgorithm"},
		{[]redisstore.Layer{{Limit: core.Limit{Events: 1}}}, "period must be > 0"},
		{[]redisstore.Layer{{Limit: core.PerDay(1).WithBurst(100)}}, "may span at most"},
	} {
		if _, err := redisstore.NewStack(c, tc.layers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewStack(%v): %v, want %q", tc.layers, err, tc.want)
		}
	}
	if _, err := redisstore.NewStack(nil, []redisstore.Layer{{Limit: core.PerSecond(1)}}); err == nil {
		t.Error("nil client accepted")
	}
}
