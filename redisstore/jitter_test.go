package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestTTLJitterSpread: with WithTTLJitter(64s), the TTLs of 640 fixed
// windows written at one instant are their time until the window ends,
// plus the margin, plus a jitter of at most 64 s, spread evenly over
// those 64 s (about 80 keys in each eighth); without it, no key's TTL
// goes past the margin.
func TestTTLJitterSpread(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	const (
		keys   = 640
		jitter = 64 * time.Second
		bins   = 8
	)
	l := core.PerMinute(5).WithAlgorithm(core.FixedWindow)
	for _, tc := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"plain", nil},
		{"jitter", []redisstore.Option{redisstore.WithTTLJitter(jitter)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
			lim := redisstore.MustNew(c, l, append([]redisstore.Option{redisstore.WithScriptClock(clk),
				redisstore.WithPrefix(tc.name + ":"), redisstore.WithTimeout(5 * time.Second)}, tc.opts...)...)
			start := time.Now()
			resets := make([]time.Duration, keys)
			for i := range keys {
				d, err := lim.Allow(ctx, fmt.Sprint("k", i), 1)
				if err != nil || !d.Allowed {
					t.Fatalf("key %d: %+v %v", i, d, err)
				}
				resets[i] = d.ResetAfter
			}
			var counts [bins]int
			for i := range keys {
				ttl, err := c.PTTL(ctx, lim.Key(fmt.Sprint("k", i))).Result()
				if err != nil {
					t.Fatal(err)
				}
				// PTTL has counted down since the write, by at most the
				// time since the first write, never by less than nothing.
				j := ttl - resets[i].Round(time.Millisecond) - redisstore.DefaultTTLMargin
				slack := time.Since(start) + time.Millisecond
				if tc.opts == nil {
					if j > 0 || j < -slack {
						t.Fatalf("key %d without jitter: PTTL %v, want the reset %v plus the margin %v, less at most %v", i, ttl, resets[i], redisstore.DefaultTTLMargin, slack)
					}
					continue
				}
				if j > jitter || j < -slack {
					t.Fatalf("key %d: PTTL %v is the reset %v, the margin %v and %v; want a jitter from 0 to %v, less at most %v", i, ttl, resets[i], redisstore.DefaultTTLMargin, j, jitter, slack)
				}
				counts[min(bins-1, max(0, int(j*bins/jitter)))]++
			}
			if tc.opts == nil {
				return
			}
			// 80 expected in each, a standard deviation of about 8.5.
			for b, n := range counts {
				if n < 40 || n > 120 {
					t.Errorf("jitters from %v to %v: %d keys of %d, want about %d: %v", time.Duration(b)*jitter/bins, time.Duration(b+1)*jitter/bins, n, keys, keys/bins, counts)
				}
			}
		})
	}
}

// jitterKind is a limiter of one kind, made with the given options: a
// call and the Redis keys a client key's state is in.
type jitterKind struct {
	name string
	make func(t *testing.T, c redis.UniversalClient, opts []redisstore.Option) (call func(key string, cost int) ([]core.Decision, error), refund func(key string, cost int) error, keys func(key string) []string)
}

// limiterKind is a Limiter of l.
func limiterKind(name string, l core.Limit) jitterKind {
	return jitterKind{name, func(t *testing.T, c redis.UniversalClient, opts []redisstore.Option) (func(string, int) ([]core.Decision, error), func(string, int) error, func(string) []string) {
		lim := redisstore.MustNew(c, l, opts...)
		return one(lim), refundOf(lim), func(k string) []string { return []string{lim.Key(k)} }
	}}
}

// one calls lim.Allow, its decision alone in a slice.
func one(lim core.Limiter) func(string, int) ([]core.Decision, error) {
	return func(k string, cost int) ([]core.Decision, error) {
		d, err := lim.Allow(context.Background(), k, cost)
		return []core.Decision{d}, err
	}
}

func refundOf(lim core.Limiter) func(string, int) error {
	return func(k string, cost int) error { return lim.Refund(context.Background(), k, cost) }
}

// TestTTLJitter: Limiters of every algorithm, a Stack, a Dynamic and a
// Multi decide exactly alike with WithTTLJitter and without, call for call
// on one clock, refunds included; and each key's TTL is then the one it
// has without jitter, plus from 0 to the jitter, the keys' jitters
// spread over it.
func TestTTLJitter(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	const jitter = 8 * time.Second
	l := core.Limit{Events: 3, Period: 2 * time.Second}
	kinds := []jitterKind{
		limiterKind("token-bucket", l),
		limiterKind("token-bucket-overdraft", l.WithOverdraft()),
		limiterKind("gcra", l.WithAlgorithm(core.GCRA)),
		limiterKind("fixed-window", l.WithAlgorithm(core.FixedWindow)),
		limiterKind("sliding-window", l.WithAlgorithm(core.SlidingWindow)),
		limiterKind("sub-windows", l.WithAlgorithm(core.SlidingWindow).WithSubWindows(4)),
		limiterKind("sliding-log", l.WithAlgorithm(core.SlidingLog)),
		limiterKind("leaky-bucket", l.WithMaxDelay(time.Second)),
		limiterKind("warm-up", l.WithWarmUp(3*time.Second, 3)),
		limiterKind("concurrency", core.Limit{Events: 2, Period: time.Second, Algorithm: core.Concurrency}),
		{"stack", func(t *testing.T, c redis.UniversalClient, opts []redisstore.Option) (func(string, int) ([]core.Decision, error), func(string, int) error, func(string) []string) {
			st, err := redisstore.NewStack(c, []core.Limit{l, {Events: 5, Period: 4 * time.Second, Algorithm: core.FixedWindow}}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return one(st), refundOf(st), st.Keys
		}},
		{"dynamic", func(t *testing.T, c redis.UniversalClient, opts []redisstore.Option) (func(string, int) ([]core.Decision, error), func(string, int) error, func(string) []string) {
			limitOf := func(k string) core.Limit {
				return core.Limit{Events: 2 + len(k)%3, Period: 2 * time.Second, Algorithm: core.GCRA}
			}
			d, err := redisstore.NewDynamic(c, limitOf, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return one(d), refundOf(d), func(k string) []string { return []string{d.Key(k)} }
		}},
		{"multi", func(t *testing.T, c redis.UniversalClient, opts []redisstore.Option) (func(string, int) ([]core.Decision, error), func(string, int) error, func(string) []string) {
			m, err := redisstore.NewMulti(c, opts...)
			if err != nil {
				t.Fatal(err)
			}
			a, b := []core.Limit{l.WithAlgorithm(core.FixedWindow)}, []core.Limit{l, {Events: 4, Period: 3 * time.Second, Algorithm: core.SlidingWindow}}
			sa := redisstore.MustNew(c, a[0], opts...)
			sb, err := redisstore.NewStack(c, b, opts...)
			if err != nil {
				t.Fatal(err)
			}
			items := func(k string, cost int) []redisstore.Item {
				return []redisstore.Item{{Key: k, Limits: a, Cost: cost}, {Key: k + "+", Limits: b, Cost: cost}}
			}
			call := func(k string, cost int) ([]core.Decision, error) {
				return m.Allow(context.Background(), items(k, cost))
			}
			refund := func(k string, cost int) error { return m.Refund(context.Background(), items(k, cost)) }
			return call, refund, func(k string) []string { return append([]string{sa.Key(k)}, sb.Keys(k+"+")...) }
		}},
	}
	var jitters []time.Duration // every key's, of every kind
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
			// A minute's margin: the keys' TTLs run on the server's clock
			// while the scripts decide on clk, and must not end before the
			// quota on clk is whole however slowly the test runs.
			base := []redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithTimeout(5 * time.Second),
				redisstore.WithTTLMargin(time.Minute)}
			plainCall, plainRefund, plainKeys := kind.make(t, c, append(base, redisstore.WithPrefix("plain:")))
			jitCall, jitRefund, jitKeys := kind.make(t, c, append(base, redisstore.WithPrefix("jitter:"), redisstore.WithTTLJitter(jitter)))
			r := rand.New(rand.NewPCG(7, 8))
			var leases []core.Lease
			admitted, refused := 0, 0
			// The longest from a plain write to the end of its twin with
			// jitter: how much later a key with jitter may have been written.
			var gap time.Duration
			// 150 random calls on 4 keys, then one on each of 32 more.
			for step := range 150 + 32 {
				key, cost := fmt.Sprint("k", r.IntN(4)), 1+r.IntN(2)
				start := time.Now()
				if step >= 150 {
					key = fmt.Sprint("k", 4+step-150)
				} else if step%5 == 4 {
					e1, e2 := plainRefund(key, cost), jitRefund(key, cost)
					gap = max(gap, time.Since(start))
					if (e1 == nil) != (e2 == nil) {
						t.Fatalf("step %d: refund %v without jitter, %v with", step, e1, e2)
					}
					continue
				}
				want, err := plainCall(key, cost)
				if err != nil {
					t.Fatal(err)
				}
				got, err := jitCall(key, cost)
				if err != nil {
					t.Fatal(err)
				}
				gap = max(gap, time.Since(start))
				for i := range want {
					if want[i].Lease.IsZero() != got[i].Lease.IsZero() {
						t.Fatalf("step %d: lease %v without jitter, %v with", step, want[i].Lease, got[i].Lease)
					}
					leases = append(leases, want[i].Lease, got[i].Lease)
					want[i].Lease, got[i].Lease = core.Lease{}, core.Lease{}
					if want[i] != got[i] {
						t.Fatalf("step %d, %s cost %d, item %d: %+v with jitter, %+v without", step, key, cost, i, got[i], want[i])
					}
					if want[i].Allowed {
						admitted++
					} else {
						refused++
					}
				}
				clk.Advance(time.Duration(r.IntN(200)) * time.Millisecond)
			}
			if admitted < 20 || refused < 20 {
				t.Fatalf("%d admitted, %d refused; the test wants many of both", admitted, refused)
			}
			// The TTLs: both keys were last written by the same call, on
			// the same state, the key with jitter at most gap after the
			// other; each PTTL counts down from its write to its read, the
			// key with jitter's read coming after the other's. So the
			// difference is the jitter, less at most the time between the
			// reads, plus at most gap (a millisecond more for rounding).
			var ds []time.Duration
			for i := range 4 + 32 {
				k := fmt.Sprint("k", i)
				pk, jk := plainKeys(k), jitKeys(k)
				for n := range pk {
					before := time.Now()
					p, err := c.PTTL(context.Background(), pk[n]).Result()
					if err != nil {
						t.Fatal(err)
					}
					j, err := c.PTTL(context.Background(), jk[n]).Result()
					if err != nil {
						t.Fatal(err)
					}
					slack := time.Since(before) + time.Millisecond
					if p < 0 || j < 0 {
						continue // never written, or a concurrency key whose leases all went
					}
					if d := j - p; d < -slack || d > jitter+gap+time.Millisecond {
						t.Fatalf("%s: PTTL %v with jitter, %v without: %v more, want from 0 to %v (less at most %v, more at most %v)", jk[n], j, p, d, jitter, slack, gap+time.Millisecond)
					}
					ds = append(ds, j-p)
				}
			}
			// Above and below half the jitter, each: 32 keys or more, each
			// as likely on either side.
			above := 0
			for _, d := range ds {
				if d > jitter/2 {
					above++
				}
			}
			if len(ds) < 32 || above == 0 || above == len(ds) {
				t.Fatalf("%d of %d keys' jitters above %v, want some on each side: %v", above, len(ds), jitter/2, ds)
			}
			jitters = append(jitters, ds...)
			for _, l := range leases {
				_ = l.Release(context.Background())
			}
		})
	}
	// The jitters of all kinds' keys (over 500), in quarters of the
	// jitter: each holds about a quarter of them.
	var quarters [4]int
	for _, d := range jitters {
		quarters[min(3, max(0, int(d*4/jitter)))]++
	}
	for q, n := range quarters {
		if n < len(jitters)/6 || n > len(jitters)/3 {
			t.Errorf("quarter %d of the jitter: %d keys of %d, want about a quarter: %v", q, n, len(jitters), quarters)
		}
	}
}

// TestTTLJitterOptions: WithTTLJitter takes 0 (none) and 1ms to 24h, on
// New, NewStack, NewDynamic and NewMulti alike; anything else is refused
// saying what to set.
func TestTTLJitterOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	l := core.PerMinute(1)
	makers := map[string]func(redisstore.Option) error{
		"New":      func(o redisstore.Option) error { _, err := redisstore.New(c, l, o); return err },
		"NewStack": func(o redisstore.Option) error { _, err := redisstore.NewStack(c, []core.Limit{l}, o); return err },
		"NewDynamic": func(o redisstore.Option) error {
			_, err := redisstore.NewDynamic(c, func(string) core.Limit { return l }, o)
			return err
		},
		"NewMulti": func(o redisstore.Option) error { _, err := redisstore.NewMulti(c, o); return err },
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				d    time.Duration
				want string // "" accepted
			}{
				{0, ""},
				{time.Millisecond, ""},
				{300 * time.Second, ""},
				{24 * time.Hour, ""},
				{-time.Second, "redisstore: WithTTLJitter(-1s): the jitter must be 0 (none) or from 1ms to 24h0m0s"},
				{500 * time.Microsecond, "redisstore: WithTTLJitter(500µs): the jitter must be 0 (none) or from 1ms to 24h0m0s"},
				{24*time.Hour + time.Millisecond, "redisstore: WithTTLJitter(24h0m0.001s): the jitter must be 0 (none) or from 1ms to 24h0m0s"},
			} {
				err := mk(redisstore.WithTTLJitter(tc.d))
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("WithTTLJitter(%v): %v", tc.d, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("WithTTLJitter(%v): error %v, want %q", tc.d, err, tc.want)
				}
			}
		})
	}
}

// TestTTLJitterTables: the shared decision tables pass exactly with
// WithTTLJitter, on a single server and on a Cluster.
func TestTTLJitterTables(t *testing.T) {
	t.Parallel()
	onServers(t, func(t *testing.T, c redis.UniversalClient) {
		for _, tab := range coretest.Tables() {
			t.Run(tab.Name, func(t *testing.T) {
				coretest.Run(t, tab, factory(c, redisstore.WithTTLJitter(time.Minute)), 0)
			})
		}
	})
}

// TestTTLJitterAllocs: drawing the margin allocates nothing: a call of a
// Limiter, a Stack or a Multi allocates as much with WithTTLJitter as
// without.
func TestTTLJitterAllocs(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	l := core.PerSecond(1_000_000)
	allocs := func(opts ...redisstore.Option) (lim, stack, multi float64) {
		opts = append([]redisstore.Option{redisstore.WithDenyCache(0), redisstore.WithTimeout(5 * time.Second)}, opts...)
		one := redisstore.MustNew(c, l, opts...)
		st, err := redisstore.NewStack(c, []core.Limit{l, core.PerHour(1_000_000).WithAlgorithm(core.FixedWindow)}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		m, err := redisstore.NewMulti(c, opts...)
		if err != nil {
			t.Fatal(err)
		}
		items := []redisstore.Item{{Key: "a", Limits: []core.Limit{l}, Cost: 1}, {Key: "b", Limits: []core.Limit{l.WithAlgorithm(core.FixedWindow)}, Cost: 1}}
		run := func(f func() error) float64 {
			if err := f(); err != nil { // the script loaded
				t.Fatal(err)
			}
			return testing.AllocsPerRun(200, func() {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			})
		}
		lim = run(func() error { _, err := one.Allow(ctx, "k", 1); return err })
		stack = run(func() error { _, err := st.Allow(ctx, "k", 1); return err })
		multi = run(func() error { _, err := m.Allow(ctx, items); return err })
		return
	}
	l0, s0, m0 := allocs()
	l1, s1, m1 := allocs(redisstore.WithTTLJitter(300 * time.Second))
	if l1 != l0 || s1 != s0 || m1 != m0 {
		t.Errorf("allocations per call with jitter: Limiter %v, Stack %v, Multi %v; without: %v, %v, %v", l1, s1, m1, l0, s0, m0)
	}
}
