package redisstore_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// holder is a client hook that holds the next single command or the next
// pipeline of scripts, once armed, until released, and records every
// pipeline's commands by name.
type holder struct {
	cmd, pipe *gate

	mu        sync.Mutex
	pipelines [][]string
}

func newHolder() *holder { return &holder{cmd: newGate(), pipe: newGate()} }

func (h *holder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return h.cmd.ProcessHook(next)
}
func (h *holder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); name != "evalsha" && name != "eval" && name != "fcall" {
			return next(ctx, cmds) // a new connection's handshake
		}
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		h.mu.Lock()
		h.pipelines = append(h.pipelines, names)
		h.mu.Unlock()
		select {
		case <-h.pipe.armed:
			close(h.pipe.entered)
			<-h.pipe.release
		default:
		}
		return next(ctx, cmds)
	}
}

// sized checks that the pipelines seen held scripts alone, as many
// as sizes says, in order.
func (h *holder) sized(t *testing.T, sizes ...int) {
	t.Helper()
	var got []int
	for _, p := range h.seen() {
		for _, name := range p {
			if name != "fcall" {
				t.Fatalf("pipeline %v: want only fcall", p)
			}
		}
		got = append(got, len(p))
	}
	if !slices.Equal(got, sizes) {
		t.Fatalf("pipelines of %v calls, want %v", got, sizes)
	}
}

// waitIdle waits (bounded) until none of l's round trips is under way:
// callers have their answers before the goroutine that sent the last
// batch gives its round trip back, and a call made before that would
// queue behind it.
func waitIdle(t *testing.T, l *redisstore.Limiter) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !redisstore.Idle(l); {
		if time.Now().After(deadline) {
			t.Fatal("round trips still under way 5 s after every answer")
		}
		runtime.Gosched()
	}
}

func (h *holder) seen() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.pipelines)
}

// batchRig is a Limiter with one round trip in flight at most, on a client
// whose commands the test can hold.
type batchRig struct {
	srv *redistest.Server
	c   *redis.Client
	h   *holder
	lim *redisstore.Limiter
}

func newBatchRig(t *testing.T, size int, opts ...redistest.Option) *batchRig {
	t.Helper()
	srv := redistest.Start(t, opts...)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	h := newHolder()
	c.AddHook(h)
	lim := redisstore.MustNew(c, core.PerHour(1000), redisstore.WithBatching(1, size), redisstore.WithDenyCache(0), redisstore.WithTimeout(10*time.Second))
	return &batchRig{srv: srv, c: c, h: h, lim: lim}
}

type result struct {
	d   core.Decision
	err error
}

// hold starts a call on key whose round trip the hook holds, and returns
// once it is held, with the channel its result comes on.
func (r *batchRig) hold(t *testing.T, key string) chan result {
	t.Helper()
	r.h.cmd.arm()
	out := make(chan result, 1)
	go func() {
		d, err := r.lim.Allow(context.Background(), key, 1)
		out <- result{d, err}
	}()
	<-r.h.cmd.entered
	return out
}

// queue starts n calls on key from ctx and returns once they all wait.
func (r *batchRig) queue(t *testing.T, ctx context.Context, key string, n int) chan result {
	t.Helper()
	want := redisstore.Waiting(r.lim) + n
	out := make(chan result, n)
	for range n {
		go func() {
			d, err := r.lim.Allow(ctx, key, 1)
			out <- result{d, err}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for redisstore.Waiting(r.lim) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait, want %d", redisstore.Waiting(r.lim), want)
		}
		runtime.Gosched()
	}
	return out
}

func collect(t *testing.T, ch chan result, n int) []result {
	t.Helper()
	var out []result
	for range n {
		select {
		case r := <-ch:
			out = append(out, r)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d calls answered", len(out), n)
		}
	}
	return out
}

// TestBatching: calls that find the round trips taken wait and go
// together, in pipelines of at most the batch size, each decided as if
// alone.
func TestBatching(t *testing.T) {
	t.Parallel()
	r := newBatchRig(t, 4)
	first := r.hold(t, "lone")
	queued := r.queue(t, context.Background(), "many", 10)
	close(r.h.cmd.release)
	if res := collect(t, first, 1)[0]; res.err != nil || !res.d.Allowed || res.d.Remaining != 999 {
		t.Fatalf("the lone call: %+v, %v", res.d, res.err)
	}
	var remaining []int
	for _, res := range collect(t, queued, 10) {
		if res.err != nil || !res.d.Allowed {
			t.Fatalf("a batched call: %+v, %v", res.d, res.err)
		}
		remaining = append(remaining, res.d.Remaining)
	}
	slices.Sort(remaining)
	for i, n := range remaining {
		if want := 990 + i; n != want {
			t.Fatalf("batched calls left %v, want 990...999: each charged once", remaining)
		}
	}
	r.h.sized(t, 4, 4, 2)
	// Alone again: no pipeline.
	waitIdle(t, r.lim)
	if _, err := r.lim.Allow(context.Background(), "after", 1); err != nil {
		t.Fatal(err)
	}
	if n := len(r.h.seen()); n != 3 {
		t.Fatalf("%d pipelines after a lone call, want still 3", n)
	}
}

// TestBatchingCallerGivesUp: a call whose context ends while it waits
// returns at once with its context's error, as a store error, and is
// never sent; the calls beside it are answered.
func TestBatchingCallerGivesUp(t *testing.T) {
	t.Parallel()
	r := newBatchRig(t, 128)
	first := r.hold(t, "lone")
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := r.queue(t, ctx, "impatient", 1)
	stayed := r.queue(t, context.Background(), "patient", 2)
	cancel()
	res := collect(t, gaveUp, 1)[0]
	if !errors.Is(res.err, context.Canceled) || !errors.Is(res.err, core.ErrStore) {
		t.Fatalf("a call given up: %v, want a store error caused by context.Canceled", res.err)
	}
	close(r.h.cmd.release)
	collect(t, first, 1)
	for _, res := range collect(t, stayed, 2) {
		if res.err != nil || !res.d.Allowed {
			t.Fatalf("a call that waited: %+v, %v", res.d, res.err)
		}
	}
	ctx = context.Background()
	if n, err := r.c.Exists(ctx, r.lim.Key("impatient")).Result(); err != nil || n != 0 {
		t.Fatalf("the call given up was sent: EXISTS %d, %v", n, err)
	}
	if p := r.h.seen(); len(p) != 1 || len(p[0]) != 2 {
		t.Fatalf("pipelines %v, want one of the two calls that waited", p)
	}
}

// TestBatchingNoScript: a pipeline whose scripts the server no longer
// knows sends them again with EVAL, once (a server without Functions; see
// TestBatchingFunctionFlush for one with).
func TestBatchingNoScript(t *testing.T) {
	t.Parallel()
	r := newBatchRig(t, 128, noFunctions)
	first := r.hold(t, "lone")
	queued := r.queue(t, context.Background(), "k", 3)
	r.h.pipe.arm()
	close(r.h.cmd.release)
	<-r.h.pipe.entered
	other := redis.NewClient(&redis.Options{Addr: r.srv.Addr(), ContextTimeoutEnabled: true})
	defer other.Close()
	if err := other.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	close(r.h.pipe.release)
	collect(t, first, 1)
	for _, res := range collect(t, queued, 3) {
		if res.err != nil || !res.d.Allowed {
			t.Fatalf("after SCRIPT FLUSH: %+v, %v", res.d, res.err)
		}
	}
	want := [][]string{{"evalsha", "evalsha", "evalsha"}, {"eval", "eval", "eval"}}
	if p := r.h.seen(); !slices.EqualFunc(p, want, slices.Equal) {
		t.Fatalf("pipelines %v, want %v", p, want)
	}
	// Each was charged once: 3 of the burst spent on k.
	d, err := r.lim.Allow(context.Background(), "k", 1)
	if err != nil || d.Remaining != 996 {
		t.Fatalf("k after three batched calls and this one: %+v, %v; want 996 left", d, err)
	}
}

// TestBatchingServerDown: every call of a pipeline that fails gets a store
// error; none is answered as a decision.
func TestBatchingServerDown(t *testing.T) {
	t.Parallel()
	r := newBatchRig(t, 128)
	first := r.hold(t, "lone")
	queued := r.queue(t, context.Background(), "k", 5)
	r.h.pipe.arm()
	close(r.h.cmd.release)
	<-r.h.pipe.entered
	r.srv.Kill()
	close(r.h.pipe.release)
	collect(t, first, 1)
	for _, res := range collect(t, queued, 5) {
		if !errors.Is(res.err, core.ErrStore) {
			t.Fatalf("a batched call with the server down: %+v, %v; want a store error", res.d, res.err)
		}
	}
}

// TestBatchingOff: WithBatching(0, 0) sends every call in a round trip of
// its own, however many are under way: calls made while one is held are
// answered at once, and no pipeline is ever sent.
func TestBatchingOff(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	h := newHolder()
	c.AddHook(h)
	r := &batchRig{srv: srv, c: c, h: h, lim: redisstore.MustNew(c, core.PerHour(1000), redisstore.WithBatching(0, 0),
		redisstore.WithDenyCache(0), redisstore.WithTimeout(10*time.Second))}
	// The script loaded, so that the held call is the only EVALSHA held.
	if _, err := r.lim.Allow(context.Background(), "warm", 1); err != nil {
		t.Fatal(err)
	}
	held := r.hold(t, "held")
	for i := range 5 {
		if d, err := r.lim.Allow(context.Background(), "k", 1); err != nil || !d.Allowed {
			t.Fatalf("call %d while one is held: %+v, %v", i, d, err)
		}
	}
	close(r.h.cmd.release)
	if res := collect(t, held, 1)[0]; res.err != nil || !res.d.Allowed {
		t.Fatalf("the held call: %+v, %v", res.d, res.err)
	}
	if p := r.h.seen(); len(p) != 0 {
		t.Fatalf("pipelines sent %v, want none", p)
	}
}
