package benchmarks

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttled/throttled/v2"
	throttledredis "github.com/throttled/throttled/v2/store/goredisstore.v9"
	ulule "github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

const (
	// redisKeys distinct keys are cycled through: at the rates reached
	// here (about 10⁵ decisions a second in all) each key sees some 25
	// requests a second, a quarter of its 100, so nearly every decision is
	// an admission and floodgate's deny cache has nothing to answer.
	redisKeys = 4096
	// redisGoroutines run the par64 rows: b.SetParallelism(p) starts
	// p×GOMAXPROCS goroutines, so p = 64/GOMAXPROCS (32 on the 2-core
	// machine the results come from: 32×2 = 64).
	redisGoroutines = 64
	// pipeDepth commands go in one pipeline in the pipe64 rows.
	pipeDepth = 64
)

// redisDecider is one thing the Redis benchmarks measure: a baseline
// command or a limiter's decision. ok is a decision's admission, or a
// baseline's expected reply; err a failure, counted in errors/op (more
// than 1% fail the benchmark).
type redisDecider interface {
	decide(ctx context.Context, key string) (ok bool, err error)
}

// redisKind says what a row's result must look like for the run to count.
type redisKind int

const (
	baseline  redisKind = iota // one command per op, writes nothing, every reply as expected
	decision                   // one key written per client key, nearly every decision admitted
	cachedDen                  // one drained key: every decision refused, nearly none reaches Redis
)

type redisImpl struct {
	name string
	kind redisKind
	// modes the row runs: "seq", "par64", "pipe64".
	modes []string
	// writes: a baseline that writes one key per client key.
	writes bool
	// layers: how many keys a decision writes per client key (0: one).
	layers int64
	// windows: how many of a client key's windows may be in Redis at once,
	// each a key (0: one key per client key).
	windows int64
	// opts changes the client's options (PoolSize) before it is made.
	opts func(*redis.Options)
	new  func(tb testing.TB, c *redis.Client) redisDecider
}

var (
	both   = []string{"seq", "par64"}
	par64  = []string{"par64"}
	pipe64 = []string{"pipe64"}
)

// redisImpls lists the Redis rows, in the order of the README's table.
var redisImpls = []redisImpl{
	{name: "ping", kind: baseline, modes: both, new: newPing},
	{name: "evalsha", kind: baseline, modes: both, new: newEvalsha},
	{name: "evalsha-floor", kind: baseline, writes: true, modes: both, new: newScriptFloor},
	{name: "floodgate", kind: decision, modes: both, new: newFloodgateRedis(core.TokenBucket)},
	{name: "floodgate-gcra", kind: decision, modes: both, new: newFloodgateRedis(core.GCRA)},
	// A fixed window: the script's, and WithClientClockWindows' INCRBY and
	// PEXPIRE (no script; a key per window, the last ones alive until their
	// TTL ends a second after the window).
	{name: "floodgate-fw", kind: decision, modes: both, new: newFloodgateRedis(core.FixedWindow)},
	{name: "floodgate-fw-windows", kind: decision, windows: 3, modes: both, new: newFloodgateRedis(core.FixedWindow, redisstore.WithClientClockWindows())},
	{name: "redis_rate", kind: decision, modes: both, new: newRedisRate},
	{name: "ulule", kind: decision, modes: both, new: newUluleRedis},
	{name: "throttled", kind: decision, modes: both, new: newThrottledRedis},
	{name: "floodgate-denied", kind: cachedDen, modes: both, new: newFloodgateDenied},
	// Two limits on every key (the policy and 100,000/h, fixed window), all
	// or nothing in one script: against two Limiters' two round trips.
	{name: "floodgate-stack2", kind: decision, layers: 2, modes: both, new: newFloodgateStack},
	// Three limits on three keys, all or nothing, as a rate-limit service
	// decides a request of three descriptors: a Multi's one script against
	// three Limiters one after another (refunding on a refusal).
	{name: "floodgate-multi3", kind: decision, layers: 3, modes: both, new: newFloodgateMulti},
	{name: "floodgate-seq3", kind: decision, layers: 3, modes: both, new: newFloodgateSeq3},

	// What else could help at 64 goroutines: a pool of one connection per
	// goroutine instead of go-redis's default 10×GOMAXPROCS, and the
	// ceiling of batching, many commands per round trip.
	{name: "ping-pool64", kind: baseline, modes: par64, opts: pool64, new: newPing},
	{name: "floodgate-pool64", kind: decision, modes: par64, opts: pool64, new: newFloodgateRedis(core.TokenBucket)},
	{name: "ping-pipe64", kind: baseline, modes: pipe64, new: newPing},
	{name: "evalsha-pipe64", kind: baseline, modes: pipe64, new: newEvalsha},
	// go-redis's AutoPipeliner (experimental in v9.23) batches concurrent
	// callers' commands into pipelines, and is a redis.UniversalClient, so
	// redisstore takes it unchanged.
	{name: "ping-autopipe", kind: baseline, modes: par64, new: newPingAutopipe},
	{name: "floodgate-autopipe", kind: decision, modes: both, new: newFloodgateAutopipe},
	{name: "floodgate-unbatched", kind: decision, modes: both, new: newFloodgateRedis(core.TokenBucket, redisstore.WithBatching(0, 0))},
	{name: "floodgate-b1", kind: decision, modes: par64, new: newFloodgateRedis(core.TokenBucket, redisstore.WithBatching(1, 128))},
	{name: "floodgate-b4", kind: decision, modes: par64, new: newFloodgateRedis(core.TokenBucket, redisstore.WithBatching(4, 128))},
	// What redisstore's per-call context.WithTimeout costs.
	{name: "floodgate-notimeout", kind: decision, modes: both, new: newFloodgateRedis(core.TokenBucket, redisstore.WithTimeout(0))},
	// What a random TTL margin per call costs (envoyproxy/ratelimit's
	// default jitter, 300 s).
	{name: "floodgate-jitter", kind: decision, modes: both, new: newFloodgateRedis(core.TokenBucket, redisstore.WithTTLJitter(300*time.Second))},
}

func pool64(o *redis.Options) { o.PoolSize = redisGoroutines }

// pinger answers PING; ok is a PONG.
type pinger struct{ c redis.Cmdable }

func newPing(_ testing.TB, c *redis.Client) redisDecider { return pinger{c} }

func newPingAutopipe(tb testing.TB, c *redis.Client) redisDecider { return pinger{autopipe(tb, c)} }

func autopipe(tb testing.TB, c *redis.Client) *redis.AutoPipeliner {
	ap, err := c.AutoPipeline()
	if err != nil {
		tb.Fatal(err)
	}
	return ap
}

func (p pinger) decide(ctx context.Context, _ string) (bool, error) {
	s, err := p.c.Ping(ctx).Result()
	return s == "PONG", err
}

func (p pinger) queue(ctx context.Context, pipe redis.Pipeliner, _ string) redis.Cmder {
	return pipe.Ping(ctx)
}

// evalsha runs a script that returns 1 with one KEYS entry, through
// Script.Run (EVALSHA, EVAL on NOSCRIPT) as redisstore does: the least a
// decision in Lua can cost.
type evalsha struct{ c *redis.Client }

var one = redis.NewScript("return 1")

func newEvalsha(_ testing.TB, c *redis.Client) redisDecider { return evalsha{c} }

func (e evalsha) decide(ctx context.Context, key string) (bool, error) {
	n, err := one.Run(ctx, e.c, []string{key}).Int()
	return n == 1, err
}

func (e evalsha) queue(ctx context.Context, pipe redis.Pipeliner, key string) redis.Cmder {
	return one.EvalSha(ctx, pipe, []string{key})
}

// floor runs the least a script deciding at the server's time must do,
// with none of the deciding: read the clock, read the key, write it with a
// TTL.
type floorScripter struct{ c *redis.Client }

var floorScript = redis.NewScript(`local t = redis.call('TIME')
redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[1] .. ' ' .. t[2], 'PX', 60000)
return 1`)

func newScriptFloor(_ testing.TB, c *redis.Client) redisDecider { return floorScripter{c} }

func (f floorScripter) decide(ctx context.Context, key string) (bool, error) {
	n, err := floorScript.Run(ctx, f.c, []string{key}).Int()
	return n == 1, err
}

// queuer is a baseline that can go into a pipeline (the pipe64 rows).
type queuer interface {
	queue(ctx context.Context, pipe redis.Pipeliner, key string) redis.Cmder
}

// floodgateRedis is redisstore with the deny cache off, so that every
// decision is a round trip.
type floodgateRedis struct{ l *redisstore.Limiter }

func newFloodgateRedis(alg core.Algorithm, opts ...redisstore.Option) func(testing.TB, *redis.Client) redisDecider {
	return func(tb testing.TB, c *redis.Client) redisDecider {
		opts := append([]redisstore.Option{redisstore.WithDenyCache(0)}, opts...)
		l, err := redisstore.New(c, policy.WithAlgorithm(alg), opts...)
		if err != nil {
			tb.Fatal(err)
		}
		return floodgateRedis{l}
	}
}

// newFloodgateStack is a redisstore stack of the policy and 100,000/h
// (fixed window), deny cache off.
func newFloodgateStack(tb testing.TB, c *redis.Client) redisDecider {
	s, err := redisstore.NewStack(c, []core.Limit{
		policy,
		core.PerHour(100_000).WithAlgorithm(core.FixedWindow),
	}, redisstore.WithDenyCache(0))
	if err != nil {
		tb.Fatal(err)
	}
	return floodgateStack{s}
}

type floodgateStack struct{ s *redisstore.Stack }

func (f floodgateStack) decide(ctx context.Context, key string) (bool, error) {
	d, err := f.s.Allow(ctx, key, 1)
	return d.Allowed, err
}

func (f floodgateRedis) decide(ctx context.Context, key string) (bool, error) {
	d, err := f.l.Allow(ctx, key, 1)
	return d.Allowed, err
}

// newFloodgateAutopipe is redisstore, deny cache off, on c's
// AutoPipeliner.
func newFloodgateAutopipe(tb testing.TB, c *redis.Client) redisDecider {
	l, err := redisstore.New(autopipe(tb, c), policy, redisstore.WithDenyCache(0))
	if err != nil {
		tb.Fatal(err)
	}
	return floodgateRedis{l}
}

// newFloodgateDenied is redisstore with its default deny cache, for the
// repeat-offender row.
func newFloodgateDenied(tb testing.TB, c *redis.Client) redisDecider {
	l, err := redisstore.New(c, policy)
	if err != nil {
		tb.Fatal(err)
	}
	return floodgateRedis{l}
}

// redisRate is go-redis/redis_rate v10 (GCRA in one Lua script, EVALSHA).
type redisRate struct{ l *redis_rate.Limiter }

var redisRateLimit = redis_rate.Limit{Rate: events, Burst: burst, Period: period}

func newRedisRate(_ testing.TB, c *redis.Client) redisDecider {
	return redisRate{redis_rate.NewLimiter(c)}
}

func (r redisRate) decide(ctx context.Context, key string) (bool, error) {
	res, err := r.l.Allow(ctx, key, redisRateLimit)
	if err != nil {
		return false, err
	}
	return res.Allowed > 0, nil
}

// ululeRedis is limiter/v3's Redis store (a fixed window from a key's
// first request, INCR and PEXPIRE in one script, EVALSHA) through
// Limiter.Get.
type ululeRedis struct{ l *ulule.Limiter }

func newUluleRedis(tb testing.TB, c *redis.Client) redisDecider {
	st, err := ululeredis.NewStoreWithOptions(c, ulule.StoreOptions{Prefix: "ulule"})
	if err != nil {
		tb.Fatal(err)
	}
	return ululeRedis{ulule.New(st, ulule.Rate{Period: period, Limit: events})}
}

func (u ululeRedis) decide(ctx context.Context, key string) (bool, error) {
	c, err := u.l.Get(ctx, key)
	return !c.Reached, err
}

// throttledRedis is throttled/v2's GCRA on its go-redis v9 store
// (store/goredisstore.v9): a pipelined TIME and GET, then SETNX and EXPIRE
// for a new key or a compare-and-swap script (EVAL, not EVALSHA) for a
// known one. MaxBurst 99 is a burst of 100 (see throttledGCRA).
type throttledRedis struct{ l *throttled.GCRARateLimiterCtx }

func newThrottledRedis(tb testing.TB, c *redis.Client) redisDecider {
	st, err := throttledredis.NewCtx(c, "throttled:")
	if err != nil {
		tb.Fatal(err)
	}
	l, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerSec(events), MaxBurst: burst - 1})
	if err != nil {
		tb.Fatal(err)
	}
	return throttledRedis{l}
}

func (t throttledRedis) decide(ctx context.Context, key string) (bool, error) {
	limited, _, err := t.l.RateLimitCtx(ctx, key, 1)
	return !limited, err
}

// redisBench is one server for a whole BenchmarkRedis run, and a client
// per row.
type redisBench struct {
	srv  *redistest.Server
	keys []string
}

// client returns a client of the server that counts its round trips: a
// command, or a pipeline of them.
func (r *redisBench) client(tb testing.TB, opts func(*redis.Options)) (*redis.Client, *roundTrips) {
	o := &redis.Options{Addr: r.srv.Addr(), ContextTimeoutEnabled: true}
	if opts != nil {
		opts(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { c.Close() })
	rt := new(roundTrips)
	c.AddHook(rt)
	return c, rt
}

// roundTrips is a go-redis hook counting what the client sends: each
// command, or each pipeline, is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// serverStats is what the server counted, from INFO.
type serverStats struct {
	// cmds is total_commands_processed: every command, those a script
	// calls included.
	cmds int64
	// expired is expired_keys: keys removed when their TTL passed.
	expired int64
	// usec is the time spent in PING, EVAL, EVALSHA and FCALL
	// (commandstats; redisstore sends FCALL to a server with Redis
	// Functions). A script's own calls are in its EVAL's (or FCALL's) time
	// and counted again under their own names, which the commands a client
	// sends directly share (GET, SET...): those are left out, and so are
	// throttled's direct GET, SETNX and EXPIRE.
	usec int64
	// plain is the time in INCRBY, DECRBY and PEXPIRE: the commands of
	// WithClientClockWindows, added to usec for its rows, which run no
	// script (a script's own PEXPIREs are in its time already).
	plain int64
}

// infoReads is how many commands readStats sends.
const infoReads = 1

func readStats(tb testing.TB, c *redis.Client) serverStats {
	tb.Helper()
	reply, err := c.Info(context.Background(), "stats", "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	info := redistest.ParseInfo(reply)
	st := serverStats{cmds: info.Int(tb, "total_commands_processed"), expired: info.Int(tb, "expired_keys")}
	for name, cs := range info.Commands(tb) {
		switch name {
		case "ping", "eval", "evalsha", "fcall":
			st.usec += cs.Usec
		case "incrby", "decrby", "pexpire":
			st.plain += cs.Usec
		}
	}
	return st
}

func dbSize(tb testing.TB, c *redis.Client) int64 {
	tb.Helper()
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func flush(tb testing.TB, c *redis.Client) {
	tb.Helper()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		tb.Fatal(err)
	}
}

// prepare empties the database, checks that d answers as its kind must
// before anything is timed, and opens up to n connections; for a
// cachedDen row it drains the key "offender" and returns it.
func prepare(tb testing.TB, c *redis.Client, im redisImpl, d redisDecider, n int) string {
	tb.Helper()
	ctx := context.Background()
	flush(tb, c)
	switch im.kind {
	case baseline:
		if ok, err := d.decide(ctx, "probe"); err != nil || !ok {
			tb.Fatalf("%s: a probe answered ok=%v, err=%v", im.name, ok, err)
		}
	case decision:
		// A fresh key is admitted, and refused once its burst is spent
		// (a refill or two may slip in while the calls run).
		admitted := 0
		for i := range burst + 10 {
			ok, err := d.decide(ctx, "probe")
			if err != nil {
				tb.Fatalf("%s: probe decision %d: %v", im.name, i, err)
			}
			if i == 0 && !ok {
				tb.Fatalf("%s: a fresh key was refused", im.name)
			}
			if ok {
				admitted++
			}
		}
		if admitted < burst || admitted >= burst+10 {
			tb.Fatalf("%s: a fresh key got %d of %d calls, want %d (or a few more refilled meanwhile)", im.name, admitted, burst+10, burst)
		}
		flush(tb, c)
	case cachedDen:
		for i := 0; ; i++ {
			ok, err := d.decide(ctx, "offender")
			if err != nil {
				tb.Fatalf("%s: draining: %v", im.name, err)
			}
			if !ok {
				break
			}
			if i > 2*burst {
				tb.Fatalf("%s: %d calls on one key, none refused", im.name, i+1)
			}
		}
	}
	// Open the connections the timed loop will use, so that it measures
	// commands rather than dials and handshakes.
	done := make(chan error, n)
	for range n {
		go func() { done <- c.Ping(ctx).Err() }()
	}
	for range n {
		if err := <-done; err != nil {
			tb.Fatal(err)
		}
	}
	return "offender"
}

// tally is what a timed loop saw.
type tally struct{ refused, failed atomic.Int64 }

func (t *tally) add(ok bool, err error) {
	if err != nil {
		t.failed.Add(1)
	} else if !ok {
		t.refused.Add(1)
	}
}

// check fails b when what the server saw or what the calls answered shows
// that the loop did not measure what the row claims. It reports rt/op
// (round trips the client made per op, a pipeline counting once), cmds/op
// (commands the server ran per op, those a Lua script calls included),
// srv-µs/op (the server's time in PING and scripts, see serverStats),
// errors/op and, for decisions, refused/op.
func check(b *testing.B, c *redis.Client, im redisImpl, t *tally, before serverStats, trips int64, lastErr *error) {
	b.Helper()
	after := readStats(b, c)
	cmds := after.cmds - before.cmds - infoReads
	b.ReportMetric(float64(trips)/float64(b.N), "rt/op")
	b.ReportMetric(float64(cmds)/float64(b.N), "cmds/op")
	usec := after.usec - before.usec
	if im.windows > 0 {
		usec += after.plain - before.plain
	}
	b.ReportMetric(float64(usec)/float64(b.N), "srv-µs/op")
	// A failed call is fast and proves nothing: more than a few fail the
	// row. The few allowed are redisstore's DefaultTimeout (100 ms) passing
	// when a busy machine stalls 64 goroutines: one run saw 44 of 10,000.
	failed := t.failed.Load()
	b.ReportMetric(float64(failed)/float64(b.N), "errors/op")
	if failed > int64(b.N)/100 {
		b.Fatalf("%s: %d of %d calls failed (last: %v)", im.name, failed, b.N, *lastErr)
	}
	refused := t.refused.Load()
	keys := dbSize(b, c)
	want := int64(min(b.N, redisKeys))
	switch im.kind {
	case baseline:
		if refused > 0 {
			b.Fatalf("%s: %d of %d replies were not as expected", im.name, refused, b.N)
		}
		if cmds < int64(b.N) {
			b.Fatalf("%s: the server processed %d commands for %d ops", im.name, cmds, b.N)
		}
		// A writing baseline's keys: one per client key, and the probe's.
		if im.writes && keys > want+1 || !im.writes && keys != 0 {
			b.Fatalf("%s: %d keys in Redis after %d ops", im.name, keys, b.N)
		}
	case decision:
		b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
		if refused > int64(b.N)/10 {
			b.Fatalf("%s: %d of %d decisions refused; %d distinct keys should be admitted", im.name, refused, b.N, redisKeys)
		}
		if cmds < int64(b.N) {
			b.Fatalf("%s: the server processed %d commands for %d decisions", im.name, cmds, b.N)
		}
		// One key per client key: each is there, or expired since (ulule's
		// fixed windows all expire a period after the first cycle of keys).
		if im.layers > 1 {
			want *= im.layers
		}
		if seen := keys + after.expired - before.expired; seen < want || keys > want*max(1, im.windows) {
			b.Fatalf("%s: %d keys in Redis and %d expired after %d decisions on %d distinct keys", im.name, keys, after.expired-before.expired, b.N, want)
		}
	case cachedDen:
		b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
		if refused < int64(b.N)*9/10 {
			b.Fatalf("%s: %d of %d decisions on a drained key refused", im.name, refused, b.N)
		}
		// A cached refusal lasts its RetryAfter, one interval (10 ms);
		// then each goroutine may make a round trip or two (a refilled
		// admission, a refusal) before the next one is cached.
		if limit := 2 * redisGoroutines * (int64(b.Elapsed()/policy.Interval()) + 1); trips > limit {
			b.Fatalf("%s: %d round trips in %v for %d cached refusals, want at most %d", im.name, trips, b.Elapsed(), b.N, limit)
		}
		if keys != 1 {
			b.Fatalf("%s: %d keys in Redis, want the drained one", im.name, keys)
		}
	}
}

// BenchmarkRedis measures one decision against one local redis-server
// (started here; skipped without redis-server in PATH): sequential (seq),
// from 64 goroutines (par64), and for two baselines in pipelines of 64
// (pipe64). Rows: PING and a trivial EVALSHA as baselines, floodgate's
// redisstore (token bucket and GCRA, deny cache off), redis_rate, ulule and
// throttled on the same server, floodgate's deny cache answering a drained
// key, and the effect of a larger pool and of per-call timeouts.
func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	rb := &redisBench{srv: srv, keys: benchwork.Keys(redisKeys)}
	if seen := distinct(rb.keys); seen != redisKeys {
		b.Fatalf("%d distinct keys of %d", seen, redisKeys)
	}
	procs := runtime.GOMAXPROCS(0)
	if redisGoroutines%procs != 0 {
		b.Skipf("GOMAXPROCS=%d does not divide %d goroutines; run with -cpu 2 (or 1, 4, ...)", procs, redisGoroutines)
	}
	ctx := context.Background()
	for _, im := range redisImpls {
		b.Run(im.name, func(b *testing.B) {
			for _, mode := range im.modes {
				b.Run(mode, func(b *testing.B) {
					c, rt := rb.client(b, im.opts)
					d := im.new(b, c)
					var t tally
					var lastErr atomic.Pointer[error]
					note := func(ok bool, err error) {
						t.add(ok, err)
						if err != nil {
							e := err // escapes here, not on every call
							lastErr.Store(&e)
						}
					}
					switch mode {
					case "seq":
						key := prepare(b, c, im, d, 1)
						before, rt0 := readStats(b, c), rt.n.Load()
						b.ReportAllocs()
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if im.kind != cachedDen {
								key = rb.keys[i%redisKeys]
							}
							note(d.decide(ctx, key))
						}
						b.StopTimer()
						check(b, c, im, &t, before, rt.n.Load()-rt0, lastErr.Load())
					case "par64":
						p := redisGoroutines / procs
						key := prepare(b, c, im, d, redisGoroutines)
						before, rt0 := readStats(b, c), rt.n.Load()
						var next, started atomic.Int64
						b.SetParallelism(p)
						b.ReportAllocs()
						b.ResetTimer()
						b.RunParallel(func(pb *testing.PB) {
							started.Add(1)
							for pb.Next() {
								k := key
								if im.kind != cachedDen {
									k = rb.keys[next.Add(1)%redisKeys]
								}
								note(d.decide(ctx, k))
							}
						})
						b.StopTimer()
						if n := started.Load(); n != redisGoroutines {
							b.Fatalf("%d goroutines ran, want %d", n, redisGoroutines)
						}
						check(b, c, im, &t, before, rt.n.Load()-rt0, lastErr.Load())
					case "pipe64":
						q, ok := d.(queuer)
						if !ok {
							b.Fatalf("%s cannot be pipelined", im.name)
						}
						prepare(b, c, im, d, 1)
						before, rt0 := readStats(b, c), rt.n.Load()
						pipe := c.Pipeline()
						cmds := make([]redis.Cmder, 0, pipeDepth)
						exec := func() {
							_, err := pipe.Exec(ctx)
							for _, cmd := range cmds {
								switch cmd := cmd.(type) {
								case *redis.StatusCmd:
									note(cmd.Val() == "PONG", cmd.Err())
								case *redis.Cmd:
									n, err := cmd.Int()
									note(n == 1, err)
								default:
									note(false, errors.New("unexpected command type"))
								}
							}
							if err != nil && t.failed.Load() == 0 {
								note(false, err)
							}
							cmds = cmds[:0]
						}
						b.ReportAllocs()
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							cmds = append(cmds, q.queue(ctx, pipe, rb.keys[i%redisKeys]))
							if len(cmds) == pipeDepth {
								exec()
							}
						}
						if len(cmds) > 0 {
							exec()
						}
						b.StopTimer()
						check(b, c, im, &t, before, rt.n.Load()-rt0, lastErr.Load())
					}
				})
			}
		})
	}
}

func distinct(keys []string) int {
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		seen[k] = struct{}{}
	}
	return len(seen)
}
