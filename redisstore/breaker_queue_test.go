package redisstore_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// stall is a client hook that holds every script sent alone (not in a
// pipeline, and not a new connection's handshake) until the test lets it
// go, one release per script, and counts the pipelines of EVALSHA or FCALL sent
// (not those that send a script again with EVAL).
type stall struct {
	entered, release chan struct{}
	pipes            atomic.Int64
}

func newStall() *stall { return &stall{entered: make(chan struct{}), release: make(chan struct{})} }

func (s *stall) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *stall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "evalsha" && name != "eval" && name != "fcall" {
			return next(ctx, cmd)
		}
		s.entered <- struct{}{}
		<-s.release
		return next(ctx, cmd)
	}
}
func (s *stall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); name == "evalsha" || name == "fcall" {
			s.pipes.Add(1)
		}
		return next(ctx, cmds)
	}
}

// hold starts a call on key and returns once its round trip is held, with
// the channel its result comes on.
func (s *stall) hold(t *testing.T, lim *redisstore.Limiter, key string) chan result {
	t.Helper()
	out := make(chan result, 1)
	go func() {
		d, err := lim.Allow(context.Background(), key, 1)
		out <- result{d, err}
	}()
	select {
	case <-s.entered:
	case <-time.After(10 * time.Second):
		t.Fatalf("the call on %s never reached the client", key)
	}
	return out
}

// queueCalls starts n calls on key and returns once they all wait for a
// round trip.
func queueCalls(t *testing.T, lim *redisstore.Limiter, key string, n int) chan result {
	t.Helper()
	want := redisstore.Waiting(lim) + n
	out := make(chan result, n)
	for range n {
		go func() {
			d, err := lim.Allow(context.Background(), key, 1)
			out <- result{d, err}
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); redisstore.Waiting(lim) < want; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait, want %d", redisstore.Waiting(lim), want)
		}
	}
	return out
}

// stallClient returns a client of srv that never retries and pauses only
// deadDialPause between dials, with s as a hook.
func stallClient(t *testing.T, srv *redistest.Server, s *stall) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	c.AddHook(s)
	return c
}

// TestQueueWaitNotCounted: calls queued behind a round trip slower than
// the timeout (the server holds scripts for longer, under CLIENT PAUSE)
// wait no longer than the timeout in all, though their callers set no
// deadline: each gets a store error whose cause is a deadline, not
// ErrCircuitOpen. Their wait is not counted by the breaker, which stays
// closed (the slow round trips themselves are counted, too few to open
// it), and Redis decides again once the pause ends. All with the default
// timeout and breaker.
func TestQueueWaitNotCounted(t *testing.T) {
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerHour(1000), redisstore.WithClock(clk), redisstore.WithBatching(1, 128), redisstore.WithDenyCache(0))
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "warm-up", 1); err != nil { // loads the script
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer admin.Close()
	// Long enough that neither the slow round trip nor the pipeline of the
	// queued calls, sent when it fails, is answered within the timeout.
	pause := 3 * redisstore.DefaultTimeout
	if err := admin.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	slow := make(chan result, 1)
	go func() {
		d, err := lim.Allow(ctx, "slow", 1)
		slow <- result{d, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); redisstore.Idle(lim); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the slow call never took its round trip")
		}
	}
	const n = 10
	queued := queueCalls(t, lim, "k", n)
	if r := collect(t, slow, 1)[0]; !errors.Is(r.err, core.ErrStore) || errors.Is(r.err, redisstore.ErrCircuitOpen) {
		t.Fatalf("the round trip the server held past the timeout: %+v, %v; want a store error", r.d, r.err)
	}
	for _, r := range collect(t, queued, n) {
		if !errors.Is(r.err, core.ErrStore) || !errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, redisstore.ErrCircuitOpen) {
			t.Fatalf("a queued call: %+v, %v; want a store error caused by the timeout", r.d, r.err)
		}
	}
	if s := lim.Health().Breaker; s != "closed" {
		t.Errorf("breaker %v, want closed: the queued calls' waits are not counted", s)
	}
	// Once the pause has ended, Redis decides again.
	for deadline := time.Now().Add(10 * time.Second); ; {
		d, err := lim.Allow(ctx, "after", 1)
		if err == nil && d.Allowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the pause: %+v, %v; want an admission from Redis", d, err)
		}
	}
}

// TestBreakerOpenAnswersQueue: when the breaker opens, the calls waiting
// for a round trip are answered at once with ErrCircuitOpen and never
// sent, while a round trip that was already out goes on.
func TestBreakerOpenAnswersQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	st := newStall()
	c := stallClient(t, srv, st)
	clk := coretest.NewClock(coretest.T0)
	// A long timeout: on a busy machine the queued calls must not give up
	// before the test lets the failing round trip go.
	lim := redisstore.MustNew(c, core.PerHour(1000), redisstore.WithClock(clk), redisstore.WithBatching(2, 128),
		redisstore.WithDenyCache(0), redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 1}), redisstore.WithTimeout(10*time.Second))
	srv.Kill()
	first, second := st.hold(t, lim, "a"), st.hold(t, lim, "b")
	const n = 10
	queued := queueCalls(t, lim, "k", n)
	st.release <- struct{}{} // one of the two fails (refused) and opens the breaker
	for _, r := range collect(t, queued, n) {
		var se *core.StoreError
		if !errors.Is(r.err, redisstore.ErrCircuitOpen) || !errors.As(r.err, &se) || se.Op != "allow" {
			t.Fatalf("a queued call when the breaker opened: %+v, %v; want ErrCircuitOpen", r.d, r.err)
		}
	}
	if s := lim.Health().Breaker; s != "open" {
		t.Fatalf("breaker %v, want open", s)
	}
	if n := st.pipes.Load(); n != 0 {
		t.Errorf("%d pipelines sent, want none: the queued calls were turned away", n)
	}
	close(st.release)
	for _, ch := range []chan result{first, second} {
		if r := collect(t, ch, 1)[0]; !errors.Is(r.err, core.ErrStore) || errors.Is(r.err, redisstore.ErrCircuitOpen) {
			t.Errorf("a call sent before the breaker opened: %+v, %v; want the dead server's store error", r.d, r.err)
		}
	}
}

// TestBreakerRequestErrors: error replies that the request itself causes
// (a key of the wrong type, a state the script cannot parse) come back as
// store errors and never open the breaker, whatever their number; a
// server that refuses writes (READONLY, a replica since a failover) opens
// it at once under MinCalls 1, and once it is a master again the probe
// closes it.
func TestBreakerRequestErrors(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerHour(1000).WithAlgorithm(core.FixedWindow), redisstore.WithClock(clk),
		redisstore.WithDenyCache(0), redisstore.WithBreaker(redisstore.BreakerConfig{MinCalls: 1, FailureRate: 1}))
	ctx := context.Background()
	if err := c.RPush(ctx, lim.Key("list"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, lim.Key("garbage"), "not a state", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		for key, want := range map[string]string{"list": "WRONGTYPE", "garbage": "floodgate: malformed state"} {
			d, err := lim.Allow(ctx, key, 1)
			if !errors.Is(err, core.ErrStore) || errors.Is(err, redisstore.ErrCircuitOpen) || !strings.Contains(err.Error(), want) || d.Allowed {
				t.Fatalf("call %d on %s: %+v, %v; want a store error saying %q", i, key, d, err, want)
			}
		}
	}
	if s := lim.Health().Breaker; s != "closed" {
		t.Fatalf("after 100 error replies the requests caused: breaker %v, want closed", s)
	}
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("a sound key: %+v, %v", d, err)
	}
	// A window later, the answered calls count no more: one failure is
	// 100 % of what the window holds.
	clk.Advance(redisstore.DefaultBreakerWindow)

	// A replica of a master that does not exist refuses every write.
	if err := c.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(ctx, "k", 1); !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("on a replica: %v; want READONLY", err)
	}
	if _, err := lim.Allow(ctx, "k", 1); !errors.Is(err, redisstore.ErrCircuitOpen) {
		t.Fatalf("after READONLY: %v; want ErrCircuitOpen", err)
	}
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(redisstore.DefaultBreakerOpenFor)
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed || lim.Health().Breaker != "closed" {
		t.Fatalf("the probe, a master again: %+v, %v, breaker %v", d, err, lim.Health().Breaker)
	}
}
