package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/pipeline"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestExactAdmission: four clients (four processes' worth of connection
// pools and deny caches) with 64 goroutines each, on one key, on the
// server's clock, admit exactly the burst; a token bucket that lends, one
// more; a leaky bucket waiting up to 99 intervals, 100 turns; a cold
// warm-up key, one.
func TestExactAdmission(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	const burst = 100
	l := core.PerHour(burst) // one token back every 36 s: none during the test
	cases := []struct {
		name string
		l    core.Limit
		want int64
	}{
		{"token-bucket", l, burst},
		{"gcra", l.WithAlgorithm(core.GCRA), burst},
		{"fixed-window", l.WithAlgorithm(core.FixedWindow), burst},
		{"sliding-window", l.WithAlgorithm(core.SlidingWindow), burst},
		{"sliding-log", l.WithAlgorithm(core.SlidingLog), burst},
		{"token-bucket-overdraft", l.WithOverdraft(), burst + 1},
		{"leaky-bucket", l.WithMaxDelay(99 * l.Interval()), 100},
		{"warm-up", l.WithWarmUp(time.Hour, 3), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				c := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 64, ContextTimeoutEnabled: true})
				defer c.Close()
				lim := redisstore.MustNew(c, tc.l, redisstore.WithTimeout(5*time.Second))
				for range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 4 {
							d, err := lim.Allow(context.Background(), "hot", 1)
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed {
								admitted.Add(1)
							}
						}
					}()
				}
			}
			wg.Wait()
			if got := admitted.Load(); got != tc.want {
				t.Fatalf("admitted %d of 1024, want exactly %d", got, tc.want)
			}
		})
	}
}

// ttls returns every key's PTTL on c.
func ttls(t *testing.T, c *redis.Client) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	iter := c.Scan(context.Background(), 0, "*", 100).Iterator()
	for iter.Next(context.Background()) {
		d, err := c.PTTL(context.Background(), iter.Val()).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[iter.Val()] = d
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTTL: every key written carries a TTL of its time until whole plus the
// margin, and a key that lost its TTL gets it back from the next decision,
// allowed or denied, and from a refund.
func TestTTL(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	ctx := context.Background()
	l := core.PerMinute(2)
	cases := []struct {
		l   core.Limit
		seq []bool // after the first admission: allowed, with the TTL lost before each
	}{
		{l, []bool{true, false}},
		{l.WithAlgorithm(core.GCRA), []bool{true, false}},
		{l.WithAlgorithm(core.FixedWindow), []bool{true, false}},
		{l.WithAlgorithm(core.SlidingWindow), []bool{true, false}},
		{l.WithAlgorithm(core.SlidingLog), []bool{true, false}},
		// Lending: the third goes into debt.
		{l.WithOverdraft(), []bool{true, true, false}},
		// Turns 30 s apart: the second waits 30 s, the third would wait 60.
		{l.WithMaxDelay(45 * time.Second), []bool{true, false}},
		// A cold key's next free instant is 84 s away.
		{l.WithWarmUp(time.Minute, 3), []bool{false, false}},
	}
	for _, tc := range cases {
		alg := tc.l.Algorithm
		lim := redisstore.MustNew(c, tc.l, redisstore.WithDenyCache(0))
		d, err := lim.Allow(ctx, "a", 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%v: %+v %v", alg, d, err)
		}
		ttl, err := c.PTTL(ctx, lim.Key("a")).Result()
		if err != nil {
			t.Fatal(err)
		}
		max := d.ResetAfter + redisstore.DefaultTTLMargin
		if ttl <= 0 || ttl > max+time.Millisecond || ttl < d.ResetAfter-time.Second {
			t.Errorf("%v: TTL %v after a decision resetting in %v, want about %v", alg, ttl, d.ResetAfter, max)
		}
		// Lost TTL, repaired by admissions and denials, then by a refund.
		for i, wantAllowed := range tc.seq {
			if err := c.Persist(ctx, lim.Key("a")).Err(); err != nil {
				t.Fatal(err)
			}
			d, err := lim.Allow(ctx, "a", 1)
			if err != nil || d.Allowed != wantAllowed {
				t.Fatalf("%v step %d: %+v %v", alg, i, d, err)
			}
			if ttl, _ := c.PTTL(ctx, lim.Key("a")).Result(); ttl <= 0 {
				t.Errorf("%v step %d (allowed=%v): key left with PTTL %v", alg, i, wantAllowed, ttl)
			}
		}
		if err := c.Persist(ctx, lim.Key("a")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := lim.Refund(ctx, "a", 1); err != nil {
			t.Fatalf("%v refund: %v", alg, err)
		}
		if ttl, _ := c.PTTL(ctx, lim.Key("a")).Result(); ttl <= 0 {
			t.Errorf("%v after a refund: key left with PTTL %v", alg, ttl)
		}
	}
	for k, ttl := range ttls(t, c) {
		if ttl <= 0 {
			t.Errorf("key %s has PTTL %v", k, ttl)
		}
	}
}

// TestKeyLayout: keys carry the prefix, the client key as a hash tag, the
// algorithm and the limit's parameters.
func TestKeyLayout(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	lim := redisstore.MustNew(c, core.PerMinute(100), redisstore.WithPrefix("svc:"))
	if got, want := lim.Key("203.0.113.7"), "svc:{203.0.113.7}:tb:100/60000000000:100"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	lim = redisstore.MustNew(c, core.PerSecond(10).WithBurst(3).WithAlgorithm(core.GCRA))
	if got, want := lim.Key("u"), "floodgate:{u}:gcra:10/1000000000:3"; got != want {
		t.Errorf("key %q, want %q", got, want)
	}
	// The algorithms' settings, defaults written out: two Limiters share
	// state only when they decide alike.
	l := core.PerSecond(10).WithBurst(3)
	for _, tc := range []struct {
		l    core.Limit
		want string
	}{
		{l.WithOverdraft(), "floodgate:{u}:tb:10/1000000000:3:overdraft"},
		{l.WithAlgorithm(core.LeakyBucket), "floodgate:{u}:lb:10/1000000000:3:1000000000"},
		{l.WithMaxDelay(time.Second), "floodgate:{u}:lb:10/1000000000:3:1000000000"},
		{l.WithMaxDelay(250 * time.Millisecond), "floodgate:{u}:lb:10/1000000000:3:250000000"},
		{l.WithWarmUp(time.Second, 0), "floodgate:{u}:wu:10/1000000000:3:1000000000x3"},
		{l.WithWarmUp(time.Second, 2.5), "floodgate:{u}:wu:10/1000000000:3:1000000000x2.5"},
	} {
		lim := redisstore.MustNew(c, tc.l)
		if got := lim.Key("u"); got != tc.want {
			t.Errorf("key %q, want %q", got, tc.want)
		}
	}
}

// TestNoScript: after SCRIPT FLUSH (as after a restart) decisions go on,
// the script sent again.
func TestNoScript(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	lim := redisstore.MustNew(c, core.PerMinute(3), redisstore.WithDenyCache(0))
	for i := 0; i < 5; i++ {
		if i == 2 {
			if err := c.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if d.Allowed != (i < 3) {
			t.Fatalf("call %d: allowed=%v", i, d.Allowed)
		}
	}
}

// skewed is a clock off the system's by a fixed amount.
type skewed time.Duration

func (s skewed) Now() int64 { return core.SystemClock.Now() + int64(s) }

// TestClockSkew: instances whose clocks are 30 s ahead and behind decide as
// one, on the server's clock: together they admit exactly the burst, and
// every refusal's RetryAfter is the server's, not shifted by the skew.
func TestClockSkew(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	l := core.PerMinute(10)
	ahead := redisstore.MustNew(c, l, redisstore.WithClock(skewed(30*time.Second)))
	behind := redisstore.MustNew(c, l, redisstore.WithClock(skewed(-30*time.Second)))
	admitted := 0
	for i := 0; i < 40; i++ {
		lim := ahead
		if i%2 == 1 {
			lim = behind
		}
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
			continue
		}
		if d.RetryAfter <= 0 || d.RetryAfter > l.Interval() {
			t.Errorf("call %d: RetryAfter %v, want within (0, %v]", i, d.RetryAfter, l.Interval())
		}
	}
	if admitted != 10 {
		t.Errorf("admitted %d, want 10", admitted)
	}
}

// counter counts the commands a client sends.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestDenyCache: a refused key is refused in process, with no round trip,
// with waits counting down on the process's clock; other costs and a
// refund go to the server; with the cache off every call does.
func TestDenyCache(t *testing.T) {
	t.Parallel()
	c := single(t).(*redis.Client)
	var sent counter
	c.AddHook(&sent)
	ctx := context.Background()
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerMinute(2), redisstore.WithClock(clk), redisstore.WithScriptClock(clk))
	var first core.Decision
	for i := 0; i < 3; i++ {
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		first = d
	}
	if first.Allowed || first.RetryAfter < 29*time.Second {
		t.Fatalf("third request: %+v, want a refusal for about 30 s", first)
	}
	before := sent.n.Load()
	for i := 0; i < 100; i++ {
		clk.Advance(100 * time.Millisecond) // 10 s in all, short of the wait
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil {
			t.Fatal(err)
		}
		want := first.RetryAfter - time.Duration(i+1)*100*time.Millisecond
		if d.Allowed || d.RetryAfter != want || d.Remaining != 0 || d.Limit != core.PerMinute(2) {
			t.Fatalf("cached call %d: %+v, want a refusal with RetryAfter %v", i, d, want)
		}
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("%d commands sent for 100 cached refusals, want 0", n)
	}
	if d, err := lim.Allow(ctx, "k", 2); err != nil || d.Allowed {
		t.Fatalf("cost 2: %+v %v", d, err)
	}
	if sent.n.Load()-before == 0 {
		t.Fatal("a cost-2 request was answered from the cache")
	}
	// A refund here clears the entry: the next request asks the server.
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after a refund: %+v %v", d, err)
	}
	// Past RetryAfter, the server decides again.
	clk.Advance(time.Minute)
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after the wait: %+v %v", d, err)
	}
	off := redisstore.MustNew(c, core.PerMinute(1), redisstore.WithDenyCache(0), redisstore.WithPrefix("off:"))
	before = sent.n.Load()
	for i := 0; i < 5; i++ {
		if _, err := off.Allow(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent.n.Load() - before; n < 5 {
		t.Fatalf("deny cache off: %d commands for 5 decisions", n)
	}
}

// TestStoreErrors: an unreachable server, a wrong password and a script
// error each give a *core.StoreError and no admission.
func TestStoreErrors(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, redistest.WithPassword("right"))
	ctx := context.Background()
	cases := map[string]func(t *testing.T) (*redisstore.Limiter, func()){
		"unreachable": func(t *testing.T) (*redisstore.Limiter, func()) {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
			return redisstore.MustNew(c, core.PerMinute(5)), func() { c.Close() }
		},
		"wrong password": func(t *testing.T) (*redisstore.Limiter, func()) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "wrong", ContextTimeoutEnabled: true})
			return redisstore.MustNew(c, core.PerMinute(5)), func() { c.Close() }
		},
		"script error": func(t *testing.T) (*redisstore.Limiter, func()) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "right", ContextTimeoutEnabled: true})
			lim := redisstore.MustNew(c, core.PerMinute(5))
			// A hash where the state should be: GET fails inside the script.
			if err := c.HSet(ctx, lim.Key("k"), "x", "y").Err(); err != nil {
				t.Fatal(err)
			}
			return lim, func() { c.Close() }
		},
		"garbage state": func(t *testing.T) (*redisstore.Limiter, func()) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "right", ContextTimeoutEnabled: true})
			lim := redisstore.MustNew(c, core.PerMinute(5), redisstore.WithPrefix("g:"))
			if err := c.Set(ctx, lim.Key("k"), "not a state", 0).Err(); err != nil {
				t.Fatal(err)
			}
			return lim, func() { c.Close() }
		},
		"timeout": func(t *testing.T) (*redisstore.Limiter, func()) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: "right", ContextTimeoutEnabled: true})
			lim := redisstore.MustNew(c, core.PerMinute(5), redisstore.WithTimeout(time.Nanosecond))
			return lim, func() { c.Close() }
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			lim, done := mk(t)
			defer done()
			d, err := lim.Allow(ctx, "k", 1)
			var se *core.StoreError
			if !errors.Is(err, core.ErrStore) || !errors.As(err, &se) {
				t.Fatalf("error %v, want a *core.StoreError", err)
			}
			if d.Allowed {
				t.Fatal("admitted on a store error")
			}
			if err := lim.Refund(ctx, "k", 1); !errors.Is(err, core.ErrStore) {
				t.Fatalf("refund: %v, want a store error", err)
			}
		})
	}
}

// TestConstruction: what New refuses, and that each message says what to
// change.
func TestConstruction(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	cases := []struct {
		name   string
		client redis.UniversalClient
		l      core.Limit
		opts   []redisstore.Option
		want   string
	}{
		{"nil client", nil, core.PerMinute(1), nil, "nil client"},
		{"invalid limit", c, core.Limit{Events: 0, Period: time.Second}, nil, "events must be >= 1"},
		{"span too long", c, core.PerDay(1).WithBurst(60), nil, "at most"},
		{"window too long", c, core.Limit{Events: 1, Period: 60 * 24 * time.Hour}.WithAlgorithm(core.SlidingWindow), nil, "shorten the period"},
		{"long window of ns", c, core.Limit{Events: 1, Period: 60*24*time.Hour + 1}.WithAlgorithm(core.FixedWindow), nil, "round the period to seconds"},
		{"brace in prefix", c, core.PerMinute(1), []redisstore.Option{redisstore.WithPrefix("a{b}")}, "brace"},
		{"negative timeout", c, core.PerMinute(1), []redisstore.Option{redisstore.WithTimeout(-1)}, "timeout"},
		{"small margin", c, core.PerMinute(1), []redisstore.Option{redisstore.WithTTLMargin(0)}, "margin"},
		{"negative cache", c, core.PerMinute(1), []redisstore.Option{redisstore.WithDenyCache(-1)}, "deny cache"},
		{"no round trips", c, core.PerMinute(1), []redisstore.Option{redisstore.WithBatching(0, 128)}, "WithBatching(0, 128)"},
		{"empty batches", c, core.PerMinute(1), []redisstore.Option{redisstore.WithBatching(2, 0)}, "both numbers must be >= 1, or both 0"},
		{"nil option", c, core.PerMinute(1), []redisstore.Option{nil}, "nil Option"},
		{"nil clock", c, core.PerMinute(1), []redisstore.Option{redisstore.WithClock(nil)}, "nil clock"},
		{"unknown algorithm", c, core.PerMinute(1).WithAlgorithm(core.Algorithm(9)), nil, "unknown algorithm"},
		// The algorithms' settings, checked by Limit.Validate as in core.
		{"overdraft on GCRA", c, core.PerMinute(1).WithOverdraft().WithAlgorithm(core.GCRA), nil, "Overdraft applies to the token bucket only, not gcra"},
		{"max delay on a token bucket", c, core.PerMinute(1).WithMaxDelay(time.Second).WithAlgorithm(core.TokenBucket), nil, "MaxDelay applies to LeakyBucket only"},
		{"negative max delay", c, core.PerMinute(1).WithMaxDelay(-1), nil, "MaxDelay -1ns: the longest wait must be > 0"},
		{"warm-up on a token bucket", c, core.PerMinute(1).WithWarmUp(time.Second, 3).WithAlgorithm(core.TokenBucket), nil, "WarmUp and ColdFactor apply to the WarmUp algorithm only"},
		{"warm-up without a period", c, core.PerMinute(1).WithAlgorithm(core.WarmUp), nil, "the WarmUp algorithm needs a warm-up period"},
		{"small cold factor", c, core.PerMinute(1).WithWarmUp(time.Second, 0.5), nil, "cold factor must be from 1"},
		{"NaN cold factor", c, core.PerMinute(1).WithWarmUp(time.Second, math.NaN()), nil, "cold factor must be from 1"},
		{"negative warm-up", c, core.PerMinute(1).WithWarmUp(-time.Second, 3), nil, "warm-up period > 0"},
		// Spans on Redis, which Lua's doubles bound: 60 days of waiting;
		// 10 cold days of 10 permits; 30 days of burst in debt.
		{"long wait", c, core.PerSecond(1).WithMaxDelay(60 * 24 * time.Hour), nil, "shorten the wait"},
		{"long cold start", c, core.PerDay(1).WithBurst(10).WithWarmUp(time.Hour, 10), nil, "lower the burst, the cold factor or the warm-up period"},
		{"long debt", c, core.PerDay(1).WithBurst(30).WithOverdraft(), nil, "with WithOverdraft a limit may span at most"},
	}
	for _, tc := range cases {
		_, err := redisstore.New(tc.client, tc.l, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	// 50 days is within the bound; so are 30 days of burst without an
	// overdraft, a 50-day wait, and 40 days of cold start and warm-up.
	if _, err := redisstore.New(c, (core.Limit{Events: 1, Period: 50 * 24 * time.Hour}).WithAlgorithm(core.SlidingWindow)); err != nil {
		t.Errorf("50-day window: %v", err)
	}
	if _, err := redisstore.New(c, core.PerDay(1).WithBurst(30)); err != nil {
		t.Errorf("30-day token bucket: %v", err)
	}
	if _, err := redisstore.New(c, core.PerSecond(1).WithMaxDelay(50*24*time.Hour)); err != nil {
		t.Errorf("50-day wait: %v", err)
	}
	if _, err := redisstore.New(c, core.PerDay(1).WithBurst(10).WithWarmUp(10*24*time.Hour, 3)); err != nil {
		t.Errorf("30 cold days and a 10-day warm-up: %v", err)
	}
}

// TestCosts: invalid costs fail as in memory, before any round trip.
func TestCosts(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	lim := redisstore.MustNew(c, core.PerMinute(10).WithBurst(5))
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "k", 0); !errors.Is(err, core.ErrInvalidCost) || errors.Is(err, core.ErrCostTooLarge) {
		t.Errorf("cost 0: %v", err)
	}
	if _, err := lim.Allow(ctx, "k", 6); !errors.Is(err, core.ErrCostTooLarge) {
		t.Errorf("cost 6 over burst 5: %v", err)
	}
	if err := lim.Refund(ctx, "k", -1); !errors.Is(err, core.ErrInvalidCost) {
		t.Errorf("refund -1: %v", err)
	}
}

// TestSentinel: through a Sentinel-backed client, decisions go on after the
// master is killed and the replica promoted.
func TestSentinel(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinel(t)
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName(), SentinelAddrs: g.SentinelAddrs(), ContextTimeoutEnabled: true})
	defer c.Close()
	ctx := context.Background()
	lim := redisstore.MustNew(c, core.PerMinute(1000), redisstore.WithTimeout(time.Second))
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("before failover: %+v %v", d, err)
	}
	old := g.KillMaster()
	g.WaitForFailover(old)
	deadline := time.Now().Add(15 * time.Second)
	for {
		d, err := lim.Allow(ctx, "k", 1)
		if err == nil && d.Allowed {
			break
		}
		if !errors.Is(err, core.ErrStore) {
			t.Fatalf("during failover: %+v %v (want a decision or a store error)", d, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision 15 s after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // real failover; bounded by the deadline
	}
}

// TestMalformedStates: a stored state the script cannot read is a store
// error, for every algorithm, never a fresh quota; so is a warm-up state
// whose stored permits are out of range.
func TestMalformedStates(t *testing.T) {
	t.Parallel()
	c := single(t)
	ctx := context.Background()
	l := core.PerSecond(10).WithBurst(3)
	warm := l.WithWarmUp(time.Second, 3)
	cases := []struct {
		l     core.Limit
		state string
	}{
		{l, "not a state"},
		{l.WithOverdraft(), "nan 1700000000 0"},
		{l.WithAlgorithm(core.GCRA), "1700000000"},
		{l.WithAlgorithm(core.FixedWindow), "x"},
		{l.WithAlgorithm(core.SlidingWindow), "x"},
		{l.WithAlgorithm(core.LeakyBucket), "1700000000 x"},
		{warm, "2 1700000000"},
		{warm, "nan 1700000000 0"},
		{warm, "-1 1700000000 0"},
		// Above full (10) is a state kept across a limit change (a
		// Dynamic's), read capped as in core; infinite is malformed.
		{warm, "1e999 1700000000 0"},
	}
	for i, tc := range cases {
		lim := redisstore.MustNew(c, tc.l, redisstore.WithPrefix(fmt.Sprintf("m%d:", i)), redisstore.WithBreaker(redisstore.BreakerConfig{}))
		if err := c.Set(ctx, lim.Key("k"), tc.state, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if d, err := lim.Allow(ctx, "k", 1); !errors.Is(err, core.ErrStore) || d.Allowed {
			t.Errorf("%s holding %q: %+v %v, want a store error", lim.Key("k"), tc.state, d, err)
		}
		if err := lim.Refund(ctx, "k", 1); !errors.Is(err, core.ErrStore) {
			t.Errorf("%s holding %q: refund %v, want a store error", lim.Key("k"), tc.state, err)
		}
	}
}

// TestShapedWaitCancelled: through the adapters' pipeline, a shaped request
// whose context ends while it waits gives its turn back on Redis, so the
// next request gets that turn.
func TestShapedWaitCancelled(t *testing.T) {
	t.Parallel()
	c := single(t)
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerSecond(10).WithAlgorithm(core.LeakyBucket),
		redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithTimeout(5*time.Second))
	p := pipeline.New(pipeline.Config[string]{Key: func(k string) (string, error) { return k, nil }})
	var res pipeline.Result
	p.Decide(context.Background(), lim, "k", 1, &res)
	if res.Outcome != core.OutcomeAllowed || res.Decision.Delay != 0 {
		t.Fatalf("first request: %+v", res)
	}
	// The client goes away once its 100 ms turn is given, before it comes.
	ctx, cancel := context.WithCancel(context.Background())
	p.Decide(ctx, cancelAfterAllow{lim, cancel}, "k", 1, &res)
	if !errors.Is(res.Err, core.ErrWaitCanceled) || res.Admitted() {
		t.Fatalf("cancelled wait: %+v, want ErrWaitCanceled", res)
	}
	d, err := lim.Allow(context.Background(), "k", 1)
	if err != nil || !d.Allowed || d.Delay != 100*time.Millisecond {
		t.Fatalf("after the cancelled wait: %+v %v, want its 100 ms turn", d, err)
	}
}

// cancelAfterAllow is a Limiter whose Allow ends the caller's context once
// it has its decision.
type cancelAfterAllow struct {
	core.Limiter
	cancel context.CancelFunc
}

func (l cancelAfterAllow) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	defer l.cancel()
	return l.Limiter.Allow(ctx, key, cost)
}
