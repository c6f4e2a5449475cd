package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// breakerRig is a Limiter on a real server whose breaker runs on a fake
// clock, with every command its client tries counted, sent or not.
type breakerRig struct {
	srv  *redistest.Server
	lim  *redisstore.Limiter
	clk  *coretest.Clock
	sent *counter
}

// deadDialPause is the pause between a client's dial attempts in the
// tests that call a killed server. go-redis dials five times per command,
// 100 ms apart by default, so each call to a dead server would take 0.4 s;
// the breaker counts failed calls, not how long they took, and these
// tests make dozens.
const deadDialPause = time.Millisecond

// newBreakerRig starts a server; its client never retries, so that each
// round trip is one command, and pauses only deadDialPause between dials.
// Its pool is larger than the failed dials the tests make: once as many
// dials as the pool holds have failed, go-redis stops dialing and tries
// again in the background once a second, so the first probe after a
// restart could find no connection.
func newBreakerRig(t *testing.T, opts ...redisstore.Option) *breakerRig {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 100, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	r := &breakerRig{srv: srv, clk: coretest.NewClock(coretest.T0), sent: &counter{}}
	c.AddHook(r.sent)
	opts = append([]redisstore.Option{redisstore.WithClock(r.clk)}, opts...)
	r.lim = redisstore.MustNew(c, core.PerMinute(1000), opts...)
	return r
}

// roundTrip calls Allow and checks that it went to the server (one
// command) and failed with a store error other than ErrCircuitOpen, or
// succeeded when ok.
func (r *breakerRig) roundTrip(t *testing.T, ctx context.Context, what string, ok bool) {
	t.Helper()
	before := r.sent.n.Load()
	d, err := r.lim.Allow(ctx, "k", 1)
	if n := r.sent.n.Load() - before; n < 1 {
		t.Fatalf("%s: no command sent, want a round trip (err %v)", what, err)
	}
	switch {
	case ok && (err != nil || !d.Allowed):
		t.Fatalf("%s: %+v, %v; want an admission from Redis", what, d, err)
	case !ok && (!errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrCircuitOpen)):
		t.Fatalf("%s: %v; want a store error from the round trip", what, err)
	}
}

// failUntilOpen makes n round trips that fail, and checks that the
// breaker is closed after each but the n-th, which opens it.
func (r *breakerRig) failUntilOpen(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if s := r.lim.Health().Breaker; s != "closed" {
			t.Fatalf("before failure %d of %d: breaker %v, want closed", i, n, s)
		}
		r.roundTrip(t, ctx, fmt.Sprintf("failure %d", i), false)
	}
	if s := r.lim.Health().Breaker; s != "open" {
		t.Fatalf("after %d failures: breaker %v, want open", n, s)
	}
}

// failFast checks that n calls each of Allow and Refund fail at once with
// ErrCircuitOpen, as a *core.StoreError, sending nothing.
func (r *breakerRig) failFast(t *testing.T, what string, n int) {
	t.Helper()
	before := r.sent.n.Load()
	for i := 0; i < n; i++ {
		d, err := r.lim.Allow(context.Background(), fmt.Sprint("k", i), 1)
		var se *core.StoreError
		if !errors.Is(err, redisstore.ErrCircuitOpen) || !errors.Is(err, core.ErrStore) || !errors.As(err, &se) || se.Op != "allow" || d.Allowed {
			t.Fatalf("%s: Allow %d: %+v, %v; want a *core.StoreError with cause ErrCircuitOpen", what, i, d, err)
		}
		err = r.lim.Refund(context.Background(), "k", 1)
		if !errors.Is(err, redisstore.ErrCircuitOpen) || !errors.As(err, &se) || se.Op != "refund" {
			t.Fatalf("%s: Refund %d: %v; want ErrCircuitOpen", what, i, err)
		}
	}
	if sent := r.sent.n.Load() - before; sent != 0 {
		t.Fatalf("%s: %d commands sent while the breaker is open, want 0", what, sent)
	}
}

// TestBreakerOutage: Redis killed, the breaker opens as its default rule
// says and calls fail fast; each open period ends in exactly one probe, and a
// failed probe doubles the period; once Redis is back, the next probe
// closes the breaker and Redis decides again.
func TestBreakerOutage(t *testing.T) {
	t.Parallel()
	r := newBreakerRig(t)
	ctx := context.Background()
	state := func(want string) {
		t.Helper()
		if got := r.lim.Health().Breaker; got != want {
			t.Fatalf("Health().Breaker = %v, want %v", got, want)
		}
	}
	r.roundTrip(t, ctx, "before the outage", true)
	state("closed")
	r.srv.Kill()
	// One success and 19 failures: 20 round trips, 95 % failed. (All
	// within one bucket of the frozen clock: the rule of the failure rate.)
	r.failUntilOpen(t, ctx, redisstore.DefaultBreakerMinCalls-1)
	state("open")
	r.failFast(t, "open", 50)
	r.clk.Advance(redisstore.DefaultBreakerOpenFor - time.Nanosecond)
	r.failFast(t, "1 ns before the end of the open period", 5)

	r.clk.Advance(time.Nanosecond)
	state("half-open")
	before := r.sent.n.Load()
	r.roundTrip(t, ctx, "first probe", false)
	if n := r.sent.n.Load() - before; n != 1 {
		t.Fatalf("first probe sent %d commands, want 1", n)
	}
	r.failFast(t, "after the failed probe", 20)
	r.clk.Advance(2*redisstore.DefaultBreakerOpenFor - time.Nanosecond)
	r.failFast(t, "1 ns before the end of the doubled period", 5)

	r.srv.Restart()
	r.failFast(t, "Redis back, period not over", 5)
	r.clk.Advance(time.Nanosecond)
	r.roundTrip(t, ctx, "second probe", true)
	for i := 0; i < 5; i++ {
		r.roundTrip(t, ctx, fmt.Sprintf("closed again, call %d", i), true)
	}
	state("closed")
}

// gate is a client hook that, once armed, holds the next command until
// released: a probe that stays out as long as the test needs.
type gate struct {
	armed            chan struct{} // arm's token, taken by the next command
	entered, release chan struct{}
}

func newGate() *gate {
	return &gate{armed: make(chan struct{}, 1), entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) arm() { g.armed <- struct{}{} }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		select {
		case <-g.armed:
			close(g.entered)
			<-g.release
		default:
		}
		return next(ctx, cmd)
	}
}
func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestBreakerOneProbe: while the probe is out, every other call, from
// many goroutines, fails fast and sends nothing.
func TestBreakerOneProbe(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	defer c.Close()
	var sent counter
	g := newGate()
	c.AddHook(&sent)
	c.AddHook(g)
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerMinute(1000), redisstore.WithClock(clk),
		redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 2, OpenFor: time.Second}))
	srv.Kill()
	for i := 0; i < 2; i++ {
		if _, err := lim.Allow(context.Background(), "k", 1); errors.Is(err, redisstore.ErrCircuitOpen) || err == nil {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	clk.Advance(time.Second)
	g.arm()
	probed := make(chan error)
	go func() {
		_, err := lim.Allow(context.Background(), "k", 1)
		probed <- err
	}()
	<-g.entered
	before := sent.n.Load()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Go(func() {
			for i := 0; i < 20; i++ {
				if _, err := lim.Allow(context.Background(), "k", 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
					t.Errorf("while the probe is out: %v, want ErrCircuitOpen", err)
				}
			}
		})
	}
	wg.Wait()
	if n := sent.n.Load() - before; n != 0 {
		t.Errorf("%d commands sent while the probe was out, want 0", n)
	}
	close(g.release)
	if err := <-probed; !errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("probe: %v, want the dead server's store error", err)
	}
	clk.Advance(2*time.Second - time.Nanosecond)
	if _, err := lim.Allow(context.Background(), "k", 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("1 ns before the doubled period ends: %v, want ErrCircuitOpen", err)
	}
}

// blackhole listens on 127.0.0.1 and accepts connections that it never
// answers: a server that hangs.
func blackhole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestBreakerHungServer: a server that accepts and never answers costs
// DefaultBreakerMinCalls requests a timeout each (all within a bucket of
// the frozen clock: the failure rate); after that no request waits.
func TestBreakerHungServer(t *testing.T) {
	t.Parallel()
	runAs(t, realTime)
	const timeout = 50 * time.Millisecond
	c := redis.NewClient(&redis.Options{Addr: blackhole(t), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	var sent counter
	c.AddHook(&sent)
	lim := redisstore.MustNew(c, core.PerMinute(10), redisstore.WithTimeout(timeout), redisstore.WithClock(coretest.NewClock(coretest.T0)))
	for i := 0; i < redisstore.DefaultBreakerMinCalls; i++ {
		if s := lim.Health().Breaker; s != "closed" {
			t.Fatalf("before call %d: breaker %v, want closed", i, s)
		}
		start := time.Now()
		_, err := lim.Allow(context.Background(), "k", 1)
		if !errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrCircuitOpen) {
			t.Fatalf("call %d to the hung server: %v, want a timeout", i, err)
		}
		if took := time.Since(start); took < timeout {
			t.Fatalf("call %d to the hung server failed after %v, before the %v timeout: %v", i, took, timeout, err)
		}
	}
	before := sent.n.Load()
	start := time.Now()
	const n = 100
	for i := 0; i < n; i++ {
		if _, err := lim.Allow(context.Background(), "k", 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
			t.Fatalf("call %d after the breaker opened: %v, want ErrCircuitOpen", i, err)
		}
	}
	// Waiting would have taken n timeouts, 5 s; the bound is generous
	// for -race on a loaded machine.
	if took := time.Since(start); took > time.Second {
		t.Errorf("%d calls with the breaker open took %v", n, took)
	}
	if s := sent.n.Load() - before; s != 0 {
		t.Errorf("%d commands sent to the hung server with the breaker open, want 0", s)
	}
}

// TestBreakerCallerGaveUp: calls whose own context has ended fail without
// counting, closed or probing: the breaker opens after DefaultBreakerMinCalls
// real failures, as if the 40 given up had not been, and a probe whose
// caller gave up is taken by the next call.
func TestBreakerCallerGaveUp(t *testing.T) {
	t.Parallel()
	r := newBreakerRig(t)
	r.srv.Kill()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for i := 0; i < 10; i++ {
		for _, ctx := range []context.Context{canceled, expired} {
			if _, err := r.lim.Allow(ctx, "k", 1); err == nil || errors.Is(err, redisstore.ErrCircuitOpen) {
				t.Fatalf("Allow with an ended context: %v", err)
			}
			if err := r.lim.Refund(ctx, "k", 1); err == nil || errors.Is(err, redisstore.ErrCircuitOpen) {
				t.Fatalf("Refund with an ended context: %v", err)
			}
		}
	}
	r.failUntilOpen(t, context.Background(), redisstore.DefaultBreakerMinCalls)
	r.failFast(t, "open", 5)
	r.clk.Advance(redisstore.DefaultBreakerOpenFor)
	if _, err := r.lim.Allow(canceled, "k", 1); err == nil || errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("probe with a canceled context: %v, want the probe taken and failed", err)
	}
	r.roundTrip(t, context.Background(), "the probe, handed on", false)
	r.failFast(t, "after the failed probe", 5)
}

// TestBreakerInvalidCost: invalid costs are refused before the breaker,
// never count, and are refused as such while it is open.
func TestBreakerInvalidCost(t *testing.T) {
	t.Parallel()
	r := newBreakerRig(t, redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 1, OpenFor: time.Second}))
	r.srv.Kill()
	bad := func(what string) {
		t.Helper()
		for _, cost := range []int{0, -1, 1001} {
			if _, err := r.lim.Allow(context.Background(), "k", cost); !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("%s: Allow cost %d: %v, want ErrInvalidCost", what, cost, err)
			}
			if err := r.lim.Refund(context.Background(), "k", cost); !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("%s: Refund cost %d: %v, want ErrInvalidCost", what, cost, err)
			}
		}
	}
	bad("closed")
	r.roundTrip(t, context.Background(), "the first real failure", false)
	bad("open")
	r.failFast(t, "open", 1)
}

// TestBreakerDenyCache: a key refused before the outage is still refused,
// from the deny cache, while the breaker is open.
func TestBreakerDenyCache(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	defer c.Close()
	var sent counter
	c.AddHook(&sent)
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerMinute(1), redisstore.WithClock(clk))
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		if d, err := lim.Allow(ctx, "k", 1); err != nil || d.Allowed != want {
			t.Fatalf("call %d: %+v, %v", i, d, err)
		}
	}
	srv.Kill()
	// Two answered round trips, then failures: 18 make 20, 90 % failed.
	const failures = redisstore.DefaultBreakerMinCalls - 2
	for i := 0; i < failures; i++ {
		lim.Allow(ctx, fmt.Sprint("other", i), 1)
	}
	if _, err := lim.Allow(ctx, "other", 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("after %d failures: %v, want ErrCircuitOpen", failures, err)
	}
	clk.Advance(redisstore.DefaultBreakerOpenFor / 2)
	before := sent.n.Load()
	d, err := lim.Allow(ctx, "k", 1)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.Limit != core.PerMinute(1) {
		t.Fatalf("cached refusal with the breaker open: %+v, %v; want a refusal", d, err)
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Errorf("cached refusal sent %d commands", n)
	}
}

// TestBreakerOff: with the zero BreakerConfig, every call goes to the
// dead server, however many failed before.
func TestBreakerOff(t *testing.T) {
	t.Parallel()
	r := newBreakerRig(t, redisstore.WithBreaker(redisstore.BreakerConfig{}))
	r.srv.Kill()
	for i := 0; i < 10; i++ {
		r.roundTrip(t, context.Background(), fmt.Sprintf("call %d", i), false)
	}
}

// TestBreakerOptions: what New refuses, each message naming the option
// and the field.
func TestBreakerOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	type bc = redisstore.BreakerConfig
	for _, tc := range []struct {
		opts []redisstore.Option
		want []string
	}{
		{[]redisstore.Option{redisstore.WithBreaker(bc{Window: time.Millisecond})}, []string{"WithBreaker: Window must be at least 10ms, got 1ms"}},
		{[]redisstore.Option{redisstore.WithBreaker(bc{MinCalls: -1})}, []string{"WithBreaker: MinCalls must be from 1 to 1073741824, got -1"}},
		{[]redisstore.Option{redisstore.WithBreaker(bc{MinCalls: 1<<30 + 1})}, []string{"MinCalls must be from 1"}},
		{[]redisstore.Option{redisstore.WithBreaker(bc{FailureRate: 101})}, []string{"WithBreaker: FailureRate must be from 1 to 100 (percent), got 101"}},
		{[]redisstore.Option{redisstore.WithBreaker(bc{OpenFor: -time.Second})}, []string{"WithBreaker: OpenFor must be > 0, got -1s"}},
		{[]redisstore.Option{redisstore.WithBreaker(bc{MinCalls: -1, FailureRate: -1})}, []string{"MinCalls must be", "FailureRate must be"}},
	} {
		_, err := redisstore.New(c, core.PerMinute(1), tc.opts...)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "redisstore: ") {
				t.Errorf("error %v, want one saying %q", err, w)
			}
		}
	}
	for _, opts := range [][]redisstore.Option{
		{redisstore.WithBreaker(bc{})}, // off
		{redisstore.WithBreaker(bc{MinCalls: 1, FailureRate: 100, OpenFor: time.Second})},
		{redisstore.WithBreaker(bc{Window: 10 * time.Millisecond, MinCalls: 1 << 30, OpenFor: time.Nanosecond})},
		{redisstore.WithBreaker(bc{OpenFor: time.Minute})},                       // the longest period 4m
		{redisstore.WithBreaker(bc{OpenFor: 1 << 62})},                           // the longest period OpenFor
		{redisstore.WithBreaker(bc{MinCalls: -1}), redisstore.WithBreaker(bc{})}, // the last one counts
		{redisstore.WithBreaker(bc{}), redisstore.WithBreaker(bc{MinCalls: 5})},
	} {
		if _, err := redisstore.New(c, core.PerMinute(1), opts...); err != nil {
			t.Errorf("valid breaker options: %v", err)
		}
	}
}

// TestBreakerAddsNoAllocation: with the breaker closed, a decision
// allocates exactly as much as without it, on a single server and on a
// Cluster, where finding a key's master (and its breaker) allocates
// nothing. Not parallel: allocations are counted for the whole process,
// so the test runs alone; its Cluster has one master, which starts
// without redis-cli's seconds of joining, and whose keys go through the
// same lookup of a slot's master as three masters'.
func TestBreakerAddsNoAllocation(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	sameAllocs(t, c)
	cl := redistest.StartCluster(t, redistest.WithMasters(1))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	defer cc.Close()
	sameAllocs(t, cc)
}

// sameAllocs checks that a decision on c allocates as much with the
// breaker, closed, as without it.
func sameAllocs(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	allocs := func(opts ...redisstore.Option) float64 {
		lim := redisstore.MustNew(c, core.PerSecond(1e6), opts...)
		if _, err := lim.Allow(ctx, "k", 1); err != nil { // loads the script
			t.Fatal(err)
		}
		return testing.AllocsPerRun(200, func() {
			if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
				t.Fatal(d, err)
			}
		})
	}
	without, with := allocs(redisstore.WithBreaker(redisstore.BreakerConfig{})), allocs()
	if with != without {
		t.Errorf("a decision allocates %v times with the breaker, %v without", with, without)
	}
}

// TestBreakerClusterMaster: on a Cluster, each master has its breaker: a
// dead master's keys fail fast, sending nothing, while keys on the others
// are decided by Redis; once it is back, its probe closes its breaker.
// (TestBreakerAddsNoAllocation counts a Cluster decision's allocations.)
func TestBreakerClusterMaster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, redistest.WithConfig("cluster-require-full-coverage no"))
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	defer cc.Close()
	var sent counter
	cc.AddHook(&sent)
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(cc, core.PerMinute(1000), redisstore.WithClock(clk))
	victim := cl.Nodes()[1]
	var dead, alive []string
	for i := 0; len(dead) < 8 || len(alive) < 8; i++ {
		k := fmt.Sprint("k", i)
		if cl.NodeFor(lim.Key(k)) == victim {
			dead = append(dead, k)
		} else {
			alive = append(alive, k)
		}
	}
	ctx := context.Background()
	decided := func(what string, keys []string) {
		t.Helper()
		for _, k := range keys {
			if d, err := lim.Allow(ctx, k, 1); err != nil || !d.Allowed {
				t.Fatalf("%s: key %s: %+v, %v; want an admission from Redis", what, k, d, err)
			}
		}
	}
	decided("before the outage", append(dead[:1:1], alive...))

	victim.Kill()
	// Its one answered round trip, then 19 failures: 20, 95 % failed.
	for i := 0; i < redisstore.DefaultBreakerMinCalls-1; i++ {
		if _, err := lim.Allow(ctx, dead[i%len(dead)], 1); !errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrCircuitOpen) {
			t.Fatalf("failure %d on the dead master: %v", i+1, err)
		}
	}
	decided("a master down, keys on the others", alive)
	before := sent.n.Load()
	for _, k := range dead {
		if _, err := lim.Allow(ctx, k, 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
			t.Fatalf("key %s on the dead master: %v, want ErrCircuitOpen", k, err)
		}
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Fatalf("%d commands sent for keys on the dead master with its breaker open", n)
	}
	decided("still, keys on the others", alive)

	victim.Restart()
	cl.WaitOK()
	clk.Advance(redisstore.DefaultBreakerOpenFor)
	decided("the master back, its probe and then its keys", dead)
}
