package redisstore_test

import (
	"context"
	"errors"
	"runtime"
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

// plug is a client hook that, while pulled, fails every command and
// pipeline as a dead server would, sending nothing; it counts the commands
// that reach the server.
type plug struct {
	pulled atomic.Bool
	sent   atomic.Int64
}

var errUnplugged = errors.New("dial tcp 10.0.0.7:6379: connect: connection refused")

func (p *plug) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *plug) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if p.pulled.Load() {
			cmd.SetErr(errUnplugged)
			return errUnplugged
		}
		p.sent.Add(1)
		return next(ctx, cmd)
	}
}
func (p *plug) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if p.pulled.Load() {
			for _, c := range cmds {
				c.SetErr(errUnplugged)
			}
			return errUnplugged
		}
		p.sent.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// plugged returns a client of a fresh server through a plug.
func plugged(t *testing.T) (redis.UniversalClient, *plug) {
	t.Helper()
	c := single(t)
	p := &plug{}
	c.AddHook(p)
	return c, p
}

// want checks a decision and its error.
func want(t *testing.T, what string, d core.Decision, err error, allowed bool, remaining int) {
	t.Helper()
	if err != nil || d.Allowed != allowed || d.Remaining != remaining {
		t.Fatalf("%s: %+v, %v; want allowed=%v remaining=%d", what, d, err, allowed, remaining)
	}
}

// wantHealth checks a limiter's health.
func wantHealth(t *testing.T, what string, r core.HealthReporter, h core.Health) {
	t.Helper()
	if got := r.Health(); got != h {
		t.Fatalf("%s: Health() = %+v, want %+v", what, got, h)
	}
}

// TestFallbackOutage: made WithFallback, a Limiter whose Redis fails
// decides in memory under the same policy, counting each failure, until
// the breaker opens; while it is open, decisions and refunds are local and
// nothing is sent; the probe that Redis answers brings decisions back to
// Redis, whose state was kept; a failed probe opens the breaker again for
// twice as long. Health reports each step.
func TestFallbackOutage(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	clk := coretest.NewClock(coretest.T0)
	l := core.PerMinute(3).WithName("api")
	lim := redisstore.MustNew(c, l, redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithDenyCache(0),
		redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 4}), redisstore.WithFallback(core.WithClock(clk)))
	ctx := context.Background()

	d, err := lim.Allow(ctx, "a", 1)
	want(t, "Redis up", d, err, true, 2)
	wantHealth(t, "Redis up", lim, core.Health{Breaker: "closed", StoreDecisions: 1})

	// One success and three failures: 75 % of 4 opens the breaker.
	p.pulled.Store(true)
	for i, left := range []int{2, 1, 0} {
		d, err := lim.Allow(ctx, "b", 1)
		want(t, "Redis down", d, err, true, left)
		if d.Limit != l {
			t.Fatalf("local decision %d under %v, want the policy %v", i, d.Limit, l)
		}
	}
	wantHealth(t, "the breaker opened", lim, core.Health{Breaker: "open", StoreDecisions: 1, LocalDecisions: 3, Failures: 3, Opens: 1})

	// Open: local decisions and refunds, nothing sent, nothing failed.
	p.pulled.Store(false)
	sent := p.sent.Load()
	d, err = lim.Allow(ctx, "b", 1)
	want(t, "open, local quota spent", d, err, false, 0)
	if err := lim.Refund(ctx, "b", 1); err != nil {
		t.Fatal(err)
	}
	d, err = lim.Allow(ctx, "b", 1)
	want(t, "open, after a local refund", d, err, true, 0)
	if n := p.sent.Load() - sent; n != 0 {
		t.Fatalf("%d commands sent while the breaker was open, want 0", n)
	}
	wantHealth(t, "open", lim, core.Health{Breaker: "open", StoreDecisions: 1, LocalDecisions: 5, Failures: 3, Opens: 1})

	// The probe, answered: Redis decides again, from the state it kept.
	clk.Advance(redisstore.DefaultBreakerOpenFor)
	wantHealth(t, "the open period over", lim, core.Health{Breaker: "half-open", StoreDecisions: 1, LocalDecisions: 5, Failures: 3, Opens: 1})
	d, err = lim.Allow(ctx, "a", 1)
	want(t, "the probe", d, err, true, 1)
	if n := p.sent.Load() - sent; n != 1 {
		t.Fatalf("the probe sent %d commands, want 1", n)
	}
	d, err = lim.Allow(ctx, "b", 1)
	want(t, "closed again, a key Redis never saw", d, err, true, 2)
	wantHealth(t, "closed again", lim, core.Health{Breaker: "closed", StoreDecisions: 3, LocalDecisions: 5, Failures: 3, Opens: 1})

	// Down again: three failures open the fresh window (with the success
	// above, 75 % of 4), the fourth call is local at once; the failed probe
	// opens it for 2 s.
	p.pulled.Store(true)
	for range 4 {
		if _, err := lim.Allow(ctx, "c", 1); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(redisstore.DefaultBreakerOpenFor)
	d, err = lim.Allow(ctx, "c", 1)
	want(t, "the failed probe", d, err, false, 0)
	wantHealth(t, "the failed probe", lim, core.Health{Breaker: "open", StoreDecisions: 3, LocalDecisions: 10, Failures: 7, Opens: 3})
	p.pulled.Store(false)
	clk.Advance(2*redisstore.DefaultBreakerOpenFor - time.Nanosecond)
	if _, err := lim.Allow(ctx, "a", 1); err != nil || lim.Health().Breaker != "open" {
		t.Fatalf("1 ns before the doubled period ends: %v, %+v; want a local decision, open", err, lim.Health())
	}
	clk.Advance(time.Nanosecond)
	d, err = lim.Allow(ctx, "a", 1)
	want(t, "the second probe", d, err, true, 0)
	wantHealth(t, "closed at last", lim, core.Health{Breaker: "closed", StoreDecisions: 4, LocalDecisions: 11, Failures: 7, Opens: 3})
}

// TestFallbackPassesErrors: errors that are not Redis failing are returned
// as they are and never counted: an invalid cost, and any error once the
// caller's context has ended.
func TestFallbackPassesErrors(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	lim := redisstore.MustNew(c, core.PerMinute(3), redisstore.WithFallback())
	ctx := context.Background()
	p.pulled.Store(true)
	for _, cost := range []int{0, 4} {
		if _, err := lim.Allow(ctx, "k", cost); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("Allow cost %d: %v, want ErrInvalidCost", cost, err)
		}
		if err := lim.Refund(ctx, "k", cost); !errors.Is(err, core.ErrInvalidCost) {
			t.Errorf("Refund cost %d: %v, want ErrInvalidCost", cost, err)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if d, err := lim.Allow(gone, "k", 1); err == nil || d.Allowed {
		t.Errorf("Allow for a caller gone: %+v, %v; want its error", d, err)
	}
	if err := lim.Refund(gone, "k", 1); err == nil {
		t.Error("Refund for a caller gone: no error")
	}
	wantHealth(t, "after errors of the callers' own", lim, core.Health{Breaker: "closed"})
}

// TestFallbackRefundSide: a refund goes where the decision would go now:
// to Redis while it answers, else to the local limiter, so a charge made
// locally is given back locally while Redis stays down.
func TestFallbackRefundSide(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerMinute(2), redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithDenyCache(0),
		redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 100}), redisstore.WithFallback(core.WithClock(clk)))
	ctx := context.Background()
	d, err := lim.Allow(ctx, "k", 1)
	want(t, "Redis", d, err, true, 1)
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	d, err = lim.Allow(ctx, "k", 2)
	want(t, "Redis after its refund", d, err, true, 0)
	// Down, the breaker still closed (a success in the window): each call
	// tries Redis, fails, and is answered locally.
	p.pulled.Store(true)
	d, err = lim.Allow(ctx, "k", 2)
	want(t, "local", d, err, true, 0)
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	d, err = lim.Allow(ctx, "k", 1)
	want(t, "local after its refund", d, err, true, 0)
	wantHealth(t, "down, closed", lim, core.Health{Breaker: "closed", StoreDecisions: 2, LocalDecisions: 2, Failures: 3})
}

// TestFallbackStackAndDynamic: a Stack falls back to a core.Stack of the
// same limits, named alike, and a Dynamic to a core.Dynamic of the same
// limit function.
func TestFallbackStackAndDynamic(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	ctx := context.Background()
	s, err := redisstore.NewStack(c, []core.Limit{core.PerSecond(2), core.PerHour(3).WithAlgorithm(core.FixedWindow)}, redisstore.WithFallback())
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[string]core.Limit{"free": core.PerMinute(1).WithName("free"), "paid": core.PerMinute(3).WithName("paid")}
	dyn, err := redisstore.NewDynamic(c, func(key string) core.Limit { return tiers[key] }, redisstore.WithFallback())
	if err != nil {
		t.Fatal(err)
	}
	wantHealth(t, "a Dynamic before its first call", dyn, core.Health{Breaker: "closed"})
	p.pulled.Store(true)
	d, err := s.Allow(ctx, "k", 2)
	want(t, "stack", d, err, true, 0)
	if d.Limit != s.Policies()[0] {
		t.Errorf("stack's local decision under %v, want %v", d.Limit, s.Policies()[0])
	}
	d, err = s.Allow(ctx, "k", 1)
	if err != nil || d.Allowed || d.Limit.Name != "2-per-s" {
		t.Errorf("stack's local refusal: %+v, %v", d, err)
	}
	for _, key := range []string{"free", "paid", "paid"} {
		d, err := dyn.Allow(ctx, key, 1)
		if err != nil || !d.Allowed || d.Limit != tiers[key] {
			t.Errorf("dynamic, %s: %+v, %v; want a local admission under its tier", key, d, err)
		}
	}
	if d, err := dyn.Allow(ctx, "free", 1); err != nil || d.Allowed {
		t.Errorf("dynamic, free again: %+v, %v; want a local refusal", d, err)
	}
	wantHealth(t, "stack", s, core.Health{Breaker: "closed", LocalDecisions: 2, Failures: 2})
	if h := dyn.Health(); h.LocalDecisions != 4 || h.StoreDecisions != 0 {
		t.Errorf("dynamic: %+v, want 4 local decisions", h)
	}
}

// TestFallbackLeases: a concurrency limit falls back to core's, whose
// leases are released in memory.
func TestFallbackLeases(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	ctx := context.Background()
	lim := redisstore.MustNew(c, core.InFlight(1), redisstore.WithFallback())
	p.pulled.Store(true)
	d, err := lim.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed || d.Lease.IsZero() {
		t.Fatalf("%+v, %v; want a local lease", d, err)
	}
	if d2, err := lim.Allow(ctx, "k", 1); err != nil || d2.Allowed {
		t.Fatalf("%+v, %v; want a local refusal", d2, err)
	}
	if err := d.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after the release: %+v, %v; want a local admission", d, err)
	}
}

// TestFallbackOptions: WithFallback's core options are checked, and their
// errors name it.
func TestFallbackOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, opt := range []redisstore.Option{redisstore.WithFallback(nil), redisstore.WithFallback(core.WithCapacity(-1))} {
		errs := []error{}
		_, err := redisstore.New(c, core.PerSecond(1), opt)
		errs = append(errs, err)
		_, err = redisstore.NewStack(c, []core.Limit{core.PerSecond(1)}, opt)
		errs = append(errs, err)
		_, err = redisstore.NewDynamic(c, func(string) core.Limit { return core.PerSecond(1) }, opt)
		errs = append(errs, err)
		for i, err := range errs {
			if err == nil || !strings.HasPrefix(err.Error(), "redisstore: WithFallback: ") {
				t.Errorf("constructor %d: %v, want an error naming WithFallback", i, err)
			}
		}
	}
}

// TestFallbackFlapping runs Allow and Refund from many goroutines while
// Redis goes down and up and the clock moves, for the race detector: no
// call fails, and every decision is counted once, on one side.
func TestFallbackFlapping(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	clk := coretest.NewClock(coretest.T0)
	// Buckets of 3 ms, the clock's step: three steps of failures open the
	// breaker.
	lim := redisstore.MustNew(c, core.PerSecond(1000), redisstore.WithClock(clk), redisstore.WithTimeout(5*time.Second), redisstore.WithDenyCache(0),
		redisstore.WithBreaker(redisstore.BreakerConfig{Window: 30 * time.Millisecond, MinCalls: 10, OpenFor: 10 * time.Millisecond}),
		redisstore.WithFallback())
	var calls atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := lim.Allow(context.Background(), "k", 1); err != nil {
					t.Errorf("Allow: %v", err)
				}
				if err := lim.Refund(context.Background(), "k", 1); err != nil {
					t.Errorf("Refund: %v", err)
				}
				calls.Add(1)
			}
		})
	}
	for i := range 64 {
		p.pulled.Store(i%8 < 3)
		clk.Advance(3 * time.Millisecond)
		_ = lim.Health()
		for seen := calls.Load(); calls.Load() < seen+8; {
			runtime.Gosched()
		}
	}
	// Up for good: Redis decides again once a probe is through, a round
	// trip of real time away.
	p.pulled.Store(false)
	clk.Advance(time.Second)
	for deadline, before := time.Now().Add(10*time.Second), lim.Health().StoreDecisions; lim.Health().StoreDecisions == before; {
		if time.Now().After(deadline) {
			t.Fatalf("%+v: Redis up and no decision from it", lim.Health())
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	h := lim.Health()
	if h.StoreDecisions+h.LocalDecisions != uint64(calls.Load()) {
		t.Errorf("%+v: %d decisions counted, want %d", h, h.StoreDecisions+h.LocalDecisions, calls.Load())
	}
	if h.Failures == 0 || h.Opens == 0 || h.LocalDecisions == 0 || h.StoreDecisions == 0 {
		t.Errorf("%+v: want both sides deciding, failures and openings", h)
	}
}

// TestHealthCountsRoundTrips: StoreDecisions counts the decisions Redis
// made, one per call that reached it; the deny cache's refusals, made in
// process, are not counted.
func TestHealthCountsRoundTrips(t *testing.T) {
	t.Parallel()
	c, p := plugged(t)
	lim := redisstore.MustNew(c, core.PerMinute(1))
	ctx := context.Background()
	d, err := lim.Allow(ctx, "k", 1)
	want(t, "first", d, err, true, 0)
	d, err = lim.Allow(ctx, "k", 1)
	want(t, "refused by Redis", d, err, false, 0)
	sent := p.sent.Load()
	d, err = lim.Allow(ctx, "k", 1)
	want(t, "refused by the deny cache", d, err, false, 0)
	if p.sent.Load() != sent {
		t.Fatal("the deny cache sent a command")
	}
	wantHealth(t, "after two round trips and a cached refusal", lim, core.Health{Breaker: "closed", StoreDecisions: 2})
}
