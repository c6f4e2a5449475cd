package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// noFunctions is the configuration of a server that refuses Functions, as
// one older than Redis 7 would (FCALL is there, but FUNCTION LOAD is not).
var noFunctions = redistest.WithConfig(`rename-command FUNCTION ""`)

// stat is one command's line of INFO commandstats.
type stat struct{ calls, failed int64 }

// ok is how many calls succeeded.
func (s stat) ok() int64 { return s.calls - s.failed }

// cmdstats reads the server at addr's INFO commandstats, by command
// ("fcall", "evalsha", "function|load").
func cmdstats(t *testing.T, addr string) map[string]stat {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	reply, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]stat{}
	for name, s := range redistest.ParseInfo(reply).Commands(t) {
		m[name] = stat{calls: s.Calls, failed: s.Failed}
	}
	return m
}

// allowN makes n calls of cost 1 on key and returns how many were admitted.
func allowN(t *testing.T, lim core.Limiter, key string, n int) int {
	t.Helper()
	admitted := 0
	for i := range n {
		d, err := lim.Allow(context.Background(), key, 1)
		if err != nil {
			t.Fatalf("call %d on %q: %v", i, key, err)
		}
		if d.Allowed {
			admitted++
		}
	}
	return admitted
}

// TestFunctionsLoadOnce: a server with Functions runs every decision with
// FCALL, and gets each library once (one for the algorithms, one per stack);
// after FUNCTION FLUSH and after a restart the library is loaded again, once,
// and no decision is lost or charged twice.
func TestFunctionsLoadOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	opts := []redisstore.Option{redisstore.WithDenyCache(0)}
	gcra := redisstore.MustNew(c, core.PerMinute(5).WithAlgorithm(core.GCRA), opts...)
	tb := redisstore.MustNew(c, core.PerMinute(5), opts...)
	sl := redisstore.MustNew(c, core.PerMinute(5).WithAlgorithm(core.SlidingLog), opts...)
	stack, err := redisstore.NewStack(c, []core.Limit{core.PerSecond(100), core.PerHour(5).WithAlgorithm(core.FixedWindow)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	lims := []core.Limiter{gcra, tb, sl, stack}
	round := func(key string, calls int) {
		t.Helper()
		for i, lim := range lims {
			if got := allowN(t, lim, key, calls); got != min(calls, 5) {
				t.Fatalf("limiter %d, key %q: %d admitted of %d calls, want %d", i, key, got, calls, min(calls, 5))
			}
		}
	}
	round("a", 3)
	s := cmdstats(t, srv.Addr())
	if s["function|load"].ok() != 2 || s["evalsha"].calls != 0 || s["eval"].calls != 0 || s["fcall"].ok() != 12 {
		t.Fatalf("after 12 decisions: %+v; want 2 libraries loaded and every decision an FCALL", s)
	}
	// The same keys across a FUNCTION FLUSH: 2 more admitted of 4, so
	// none was charged twice or lost.
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i, lim := range lims {
		if got := allowN(t, lim, "a", 4); got != 2 {
			t.Fatalf("limiter %d after FUNCTION FLUSH: %d admitted of 4, want 2", i, got)
		}
	}
	s = cmdstats(t, srv.Addr())
	if s["function|load"].ok() != 4 || s["evalsha"].calls != 0 || s["fcall"].ok() != 28 {
		t.Fatalf("after FUNCTION FLUSH: %+v; want each library loaded once more, every decision an FCALL", s)
	}
	srv.Restart() // no persistence: the state and the library are gone
	round("b", 6)
	s = cmdstats(t, srv.Addr())
	if s["function|load"].ok() != 2 || s["evalsha"].calls != 0 || s["fcall"].ok() != 24 {
		t.Fatalf("after a restart: %+v; want each library loaded once, every decision an FCALL", s)
	}
}

// TestFunctionsFlushUnderLoad: batched calls across FUNCTION FLUSHes are
// each charged exactly once.
func TestFunctionsFlushUnderLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	clk := coretest.NewClock(coretest.T0) // still: nothing refills
	lim := redisstore.MustNew(c, core.PerHour(100000).WithAlgorithm(core.GCRA), redisstore.WithTimeout(10*time.Second),
		redisstore.WithClock(clk), redisstore.WithScriptClock(clk))
	const workers, calls = 16, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range calls {
				if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					errs <- fmt.Errorf("%+v, %v", d, err)
					return
				}
			}
		})
	}
	for range 5 {
		time.Sleep(10 * time.Millisecond)
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, err := lim.Allow(ctx, "k", 1)
	if want := 100000 - workers*calls - 1; err != nil || d.Remaining != want {
		t.Fatalf("after %d calls: %+v, %v; want %d left", workers*calls, d, err, want)
	}
	if s := cmdstats(t, srv.Addr()); s["evalsha"].calls != 0 || s["function|load"].ok() < 1 {
		t.Fatalf("%+v: want FCALL only", s)
	}
}

// TestFunctionsCluster: every master of a Cluster gets the library once,
// and again after a FUNCTION FLUSH on it.
func TestFunctionsCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	lim := redisstore.MustNew(c, core.PerMinute(5), redisstore.WithDenyCache(0))
	keys := make([]string, 64) // over every master
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		if got := allowN(t, lim, keys[i], 2); got != 2 {
			t.Fatalf("key %d: %d admitted", i, got)
		}
	}
	nodes := cl.Nodes()
	for _, n := range nodes {
		if s := cmdstats(t, n.Addr()); s["function|load"].ok() != 1 || s["evalsha"].calls != 0 {
			t.Fatalf("master %s: %+v; want the library loaded once, no EVALSHA", n.Addr(), s)
		}
	}
	one := redis.NewClient(&redis.Options{Addr: nodes[0].Addr()})
	defer one.Close()
	if err := one.FunctionFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if got := allowN(t, lim, k, 4); got != 3 {
			t.Fatalf("key %d after a FUNCTION FLUSH on one master: %d admitted of 4, want 3", i, got)
		}
	}
	if s := cmdstats(t, nodes[0].Addr()); s["function|load"].ok() != 2 {
		t.Fatalf("the master flushed: %+v; want the library loaded twice", s)
	}
}

// TestFunctionsRefused: a server that refuses FUNCTION LOAD gets EVALSHA,
// after one FCALL per Limiter that found no function, and decides the same.
func TestFunctionsRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, noFunctions)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	lim := redisstore.MustNew(c, core.PerMinute(5), redisstore.WithDenyCache(0))
	if got := allowN(t, lim, "k", 8); got != 5 {
		t.Fatalf("%d admitted of 8, want 5", got)
	}
	s := cmdstats(t, srv.Addr())
	if s["fcall"].calls != 1 || s["fcall"].ok() != 0 || s["evalsha"].calls != 8 || s["function|load"].calls != 0 {
		t.Fatalf("%+v: want one FCALL (no function), then EVALSHA for every decision", s)
	}
}

// TestFunctionsSameDecisions: FCALL and EVALSHA decide a random trace of
// every algorithm, and of a stack, alike, to the nanosecond.
func TestFunctionsSameDecisions(t *testing.T) {
	t.Parallel()
	with, without := redistest.Start(t), redistest.Start(t, noFunctions)
	cw := redis.NewClient(&redis.Options{Addr: with.Addr(), ContextTimeoutEnabled: true})
	co := redis.NewClient(&redis.Options{Addr: without.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { cw.Close(); co.Close() })
	base := core.Limit{Events: 7, Period: 2 * time.Second, Burst: 5}
	limits := []core.Limit{
		base, base.WithAlgorithm(core.GCRA), base.WithAlgorithm(core.FixedWindow),
		base.WithAlgorithm(core.SlidingWindow), base.WithSubWindows(4), base.WithAlgorithm(core.SlidingLog),
		base.WithMaxDelay(time.Second), base.WithWarmUp(3*time.Second, 3), base.WithOverdraft(),
	}
	r := rand.New(rand.NewPCG(20, 25))
	for i := -1; i < len(limits); i++ {
		name := "stack"
		if i >= 0 {
			name = limits[i].String()
		}
		t.Run(name, func(t *testing.T) {
			clk := coretest.NewClock(coretest.T0.Add(time.Duration(r.Int64N(int64(time.Hour)))))
			mk := func(c redis.UniversalClient) core.Limiter {
				opts := []redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithDenyCache(0)}
				if i < 0 {
					s, err := redisstore.NewStack(c, []core.Limit{limits[1], base.WithAlgorithm(core.FixedWindow).WithName("fw")}, opts...)
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				return redisstore.MustNew(c, limits[i], opts...)
			}
			a, b := mk(cw), mk(co)
			ctx := context.Background()
			for step := range 200 {
				clk.Advance(time.Duration(r.Int64N(int64(400 * time.Millisecond))))
				cost := 1 + r.IntN(3)
				if r.IntN(5) == 0 {
					ea, eb := a.Refund(ctx, "k", cost), b.Refund(ctx, "k", cost)
					if ea != nil || eb != nil {
						t.Fatalf("step %d: refund: %v, %v", step, ea, eb)
					}
					continue
				}
				da, ea := a.Allow(ctx, "k", cost)
				db, eb := b.Allow(ctx, "k", cost)
				if ea != nil || eb != nil || da != db {
					t.Fatalf("step %d, cost %d: FCALL %+v, %v; EVALSHA %+v, %v", step, cost, da, ea, db, eb)
				}
			}
		})
	}
	sw, so := cmdstats(t, with.Addr()), cmdstats(t, without.Addr())
	if sw["evalsha"].calls != 0 || sw["fcall"].ok() == 0 || so["fcall"].ok() != 0 || so["evalsha"].calls == 0 {
		t.Fatalf("with Functions %+v, without %+v: want FCALL on one, EVALSHA on the other", sw, so)
	}
}

// TestBatchingFunctionFlush: a pipeline whose function the server lost
// (FUNCTION FLUSH) loads the library once and sends its calls again with
// FCALL, each charged once.
func TestBatchingFunctionFlush(t *testing.T) {
	t.Parallel()
	r := newBatchRig(t, 128)
	first := r.hold(t, "lone")
	queued := r.queue(t, context.Background(), "k", 3)
	r.h.pipe.arm()
	close(r.h.cmd.release)
	<-r.h.pipe.entered
	other := redis.NewClient(&redis.Options{Addr: r.srv.Addr(), ContextTimeoutEnabled: true})
	defer other.Close()
	if err := other.FunctionFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	close(r.h.pipe.release)
	collect(t, first, 1)
	for _, res := range collect(t, queued, 3) {
		if res.err != nil || !res.d.Allowed {
			t.Fatalf("after FUNCTION FLUSH: %+v, %v", res.d, res.err)
		}
	}
	want := [][]string{{"fcall", "fcall", "fcall"}, {"fcall", "fcall", "fcall"}}
	if p := r.h.seen(); !slices.EqualFunc(p, want, slices.Equal) {
		t.Fatalf("pipelines %v, want %v", p, want)
	}
	d, err := r.lim.Allow(context.Background(), "k", 1)
	if err != nil || d.Remaining != 996 {
		t.Fatalf("k after three batched calls and this one: %+v, %v; want 996 left", d, err)
	}
	if s := cmdstats(t, r.srv.Addr()); s["function|load"].ok() != 2 {
		t.Fatalf("%+v: want the library loaded twice (first use, after the flush)", s)
	}
}
