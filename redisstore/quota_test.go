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

// quotaRig is instances of one limit (or stack) on one server, each with the local
// quota, deciding at one fake clock's time; lease ends fire when the test
// says (fire).
type quotaRig struct {
	t    *testing.T
	clk  *coretest.Clock
	lims []*redisstore.Limiter
	all  []core.Limiter // the instances: lims, or a stack's
	mu   sync.Mutex
	ends []timed
	// prefix is the instances' key prefix.
	prefix string
}

func newQuotaRig(t *testing.T, c redis.UniversalClient, l core.Limit, instances int, length time.Duration, hot int) *quotaRig {
	r := newRig(t)
	for range instances {
		lim, err := redisstore.New(c, l, r.options(length, hot)...)
		if err != nil {
			t.Fatal(err)
		}
		r.lims = append(r.lims, lim)
		r.all = append(r.all, lim)
	}
	return r
}

// newStackRig is newQuotaRig for instances of a stack of layers.
func newStackRig(t *testing.T, c redis.UniversalClient, layers []core.Limit, instances int) *quotaRig {
	r := newRig(t)
	for range instances {
		s, err := redisstore.NewStack(c, layers, r.options(0, 0)...)
		if err != nil {
			t.Fatal(err)
		}
		r.all = append(r.all, s)
	}
	return r
}

func newRig(t *testing.T) *quotaRig {
	return &quotaRig{t: t, clk: coretest.NewClock(coretest.T0), prefix: fmt.Sprintf("q%d:", rand.Uint64())}
}

// options are the instances' options: the rig's clock, prefix and lease
// ends, and local quota.
func (r *quotaRig) options(length time.Duration, hot int) []redisstore.Option {
	// An hour's TTL margin: the keys' TTLs follow the fake clock, but
	// Redis ends them in real time, and a slow step must not lose one.
	return []redisstore.Option{redisstore.WithClock(r.clk), redisstore.WithScriptClock(r.clk),
		redisstore.WithPrefix(r.prefix), redisstore.WithTimeout(5 * time.Second), redisstore.WithTTLMargin(time.Hour),
		redisstore.WithLocalQuota(redisstore.LocalQuota{Length: length, Hot: hot}),
		redisstore.WithAfterFunc(func(d time.Duration, f func()) func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ends = append(r.ends, timed{at: r.clk.Now() + int64(d), f: f})
			return func() bool { return false }
		})}
}

// timed is a function scheduled (WithAfterFunc) to run at an instant of
// the rig's clock.
type timed struct {
	at int64
	f  func()
}

// fire runs the lease ends scheduled so far and waits for the returns.
func (r *quotaRig) fire() {
	r.mu.Lock()
	ends := r.ends
	r.ends = nil
	r.mu.Unlock()
	for _, e := range ends {
		e.f()
	}
	r.settle()
}

// fireDue runs the scheduled functions whose instant has come, as timers
// would, and waits for the returns they start.
func (r *quotaRig) fireDue() {
	now := r.clk.Now()
	r.mu.Lock()
	var due []timed
	kept := r.ends[:0]
	for _, e := range r.ends {
		if e.at <= now {
			due = append(due, e)
		} else {
			kept = append(kept, e)
		}
	}
	r.ends = kept
	r.mu.Unlock()
	for _, e := range due {
		e.f()
	}
	r.settle()
}

func (r *quotaRig) settle() {
	for _, l := range r.all {
		redisstore.QuotaSettle(l)
	}
}

// allow asks instance i about key at cost 1.
func (r *quotaRig) allow(i int, key string) core.Decision {
	r.t.Helper()
	d, err := r.all[i].Allow(context.Background(), key, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func counts(l *redisstore.Limiter) string {
	g, d, ret := redisstore.QuotaCounts(l)
	return fmt.Sprintf("grants %d, leased %d, returned %d, store %d", g, d, ret, l.Health().StoreDecisions)
}

// TestQuotaLease walks one key through a lease's life on the fake clock:
// cold calls are round trips; the hot key's grant; decisions from the
// lease; its end, its return and the next grant; a limit exhausted.
func TestQuotaLease(t *testing.T) {
	t.Parallel()
	c := single(t)
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket, core.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			// 100 a minute: a lease lasts 1 s (a tenth of the period, at
			// most 1 s) and 4 calls within it make a key hot.
			l := core.PerMinute(100).WithAlgorithm(alg)
			r := newQuotaRig(t, c, l, 1, 0, 4)
			lim := r.lims[0]
			for i := range 3 {
				if d := r.allow(0, "k"); !d.Allowed || d.Remaining != 99-i {
					t.Fatalf("cold call %d: %+v", i, d)
				}
			}
			if g, d, _ := redisstore.QuotaCounts(lim); g != 0 || d != 0 || lim.Health().StoreDecisions != 3 {
				t.Fatalf("three cold calls: %s, want three round trips", counts(lim))
			}
			// The fourth call makes the key hot: a grant of the demand over
			// one length and a quarter more (4 calls in 1 s: 5 units), of
			// which this call spends one.
			if d := r.allow(0, "k"); !d.Allowed || d.Remaining != 96 || !d.Leased {
				t.Fatalf("the grant's call: %+v, want 96 left (92 shared, 4 held), from the lease", d)
			}
			// Two calls from the lease, in memory.
			for i := range 2 {
				if d := r.allow(0, "k"); !d.Allowed || d.Remaining != 95-i || !d.Leased {
					t.Fatalf("leased call %d: %+v", i, d)
				}
			}
			// The grant's call and these two are decisions from the lease.
			if g, d, _ := redisstore.QuotaCounts(lim); g != 1 || d != 3 || lim.Health().StoreDecisions != 3 {
				t.Fatalf("after two leased calls: %s, want one grant and three leased decisions", counts(lim))
			}
			if h := lim.Health(); h.Leases != 1 || h.LeaseDecisions != 3 || h.Returned != 0 {
				t.Fatalf("Health after two leased calls: %+v", h)
			}
			// Two more spend the lease: nothing is asked while it can pay a
			// call (asked sooner, the next lease would replace this one and
			// its last units would go back too late for the demand).
			for i := range 2 {
				if d := r.allow(0, "k"); !d.Allowed || d.Remaining != 93-i || !d.Leased {
					t.Fatalf("leased call %d: %+v", 2+i, d)
				}
			}
			if g, _, ret := redisstore.QuotaCounts(lim); g != 1 || ret != 0 {
				t.Fatalf("the lease spent: %s, want still one grant and nothing back", counts(lim))
			}
			// The next call finds it spent and takes the next lease, of the
			// demand (9 calls in this length: 12 units), of which it spends
			// one: 80 shared (100 less 8 spent, less the 12), 11 held.
			if d := r.allow(0, "k"); !d.Allowed || d.Remaining != 91 || !d.Leased {
				t.Fatalf("the second grant's call: %+v, want 91 left (80 shared, 11 held), from the lease", d)
			}
			if g, _, _ := redisstore.QuotaCounts(lim); g != 2 {
				t.Fatalf("after the second grant: %s, want two grants", counts(lim))
			}
			// The lease ends unspent: its units go back to Redis. (A fixed
			// window's lease also ends with its window; T0 is on a whole
			// minute, so not before this.)
			r.clk.Advance(time.Second)
			r.fire()
			_, _, ret := redisstore.QuotaCounts(lim)
			if h := lim.Health(); ret == 0 || h.Returned != uint64(ret) || h.Returns != 1 {
				t.Fatalf("after the lease ended: %s (Health %+v), want its units back in one round trip", counts(lim), h)
			}
			// Redis is charged exactly what was spent, 9 calls (3 cold, 5
			// from the first lease, 1 from the second), and the buckets
			// refilled for a second at 100 a minute (one unit).
			want := 92
			if alg == core.FixedWindow {
				want = 91
			}
			if got := r.spendAll(c, l, "k"); got != want {
				t.Fatalf("Redis admits %d more after 9 admissions and the returns, want %d", got, want)
			}
		})
	}
}

// spendAll spends what is left for key at the clock's instant with a plain
// Limiter (no local quota) on the rig's keys, one unit at a time, and
// returns how many it admitted.
func (r *quotaRig) spendAll(c redis.UniversalClient, l core.Limit, key string) int {
	r.t.Helper()
	return r.spend(c, l, key, l.EffectiveBurst()+1)
}

// spend is spendAll, stopping after most admissions.
func (r *quotaRig) spend(c redis.UniversalClient, l core.Limit, key string, most int) int {
	r.t.Helper()
	plain, err := redisstore.New(c, l, redisstore.WithClock(r.clk), redisstore.WithScriptClock(r.clk),
		redisstore.WithPrefix(r.prefix), redisstore.WithDenyCache(0))
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for ; n < most; n++ {
		d, err := plain.Allow(context.Background(), key, 1)
		if err != nil {
			r.t.Fatal(err)
		}
		if !d.Allowed {
			return n
		}
	}
	if most > l.EffectiveBurst() {
		r.t.Fatalf("%d admitted in a row at one instant under %v", n, l)
	}
	return n
}

// hammer has every instance's goroutines call key calls times each at the
// clock's instant and returns how many were admitted.
func (r *quotaRig) hammer(key string, goroutines, calls int) int {
	r.t.Helper()
	var admitted, failed atomic.Int64
	var wg sync.WaitGroup
	for _, lim := range r.all {
		for range goroutines {
			wg.Go(func() {
				for range calls {
					d, err := lim.Allow(context.Background(), key, 1)
					switch {
					case err != nil:
						failed.Add(1)
					case d.Allowed:
						admitted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		r.t.Fatalf("%d calls failed", n)
	}
	return int(admitted.Load())
}

// drain hammers key in rounds, the clock moving on by step (a lease's
// length) between them, so that leases and the waits after small grants
// end and units given back are asked for again, until a round admits
// nothing; it returns how many were admitted in all. The tests' limits
// refill nothing to speak of, and their windows do not turn, in the few
// steps this takes.
func (r *quotaRig) drain(key string, goroutines, calls int, step time.Duration) int {
	r.t.Helper()
	total := 0
	for range 10 {
		n := r.hammer(key, goroutines, calls)
		total += n
		if n == 0 {
			return total
		}
		r.clk.Advance(step)
		r.fire()
	}
	r.t.Fatalf("still admitting after 10 rounds (%d in all)", total)
	return total
}

// TestQuotaFleetExact: 4 instances × 16 goroutines on one hot key never
// admit more than the limit, and once the leases have ended and their
// units are back, exactly the limit: nothing spent is lost, nothing
// unspent is kept. The clock stands still (but for a lease's length), and
// the limit refills one unit every 5 minutes.
func TestQuotaFleetExact(t *testing.T) {
	t.Parallel()
	c := single(t)
	const burst = 1000
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket, core.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			l := core.Limit{Events: burst, Period: burst * 5 * time.Minute}.WithAlgorithm(alg)
			r := newQuotaRig(t, c, l, 4, 0, 0)
			// Fewer calls than the limit: the leases hold units when the
			// clock moves on.
			first := r.hammer("hot", 16, burst/128)
			if first > burst {
				t.Fatalf("the fleet admitted %d, more than the limit %d", first, burst)
			}
			// Then, until a round admits nothing: every lease ends (and
			// every wait after a small grant), the units go back, and the
			// goroutines call again.
			r.clk.Advance(time.Second)
			r.fire()
			second := r.drain("hot", 16, 3*burst/64, time.Second)
			if first+second != burst {
				t.Errorf("the fleet admitted %d + %d once the leases were back, want exactly %d", first, second, burst)
			}
			var grants uint64
			var back int64
			for _, lim := range r.lims {
				g, _, n := redisstore.QuotaCounts(lim)
				grants, back = grants+g, back+n
			}
			if back == 0 {
				t.Errorf("no unit was given back: the leases held none when they ended")
			}
			t.Logf("%d + %d admitted; %d grants for %d calls; %d units given back", first, second, grants, 4*16*(burst/128+3*burst/64), back)
		})
	}
}

// TestQuotaFixedWindowReturn: a lease of a fixed window ends with its
// window, and its units, returned after the window has turned, are not
// added to the next window: every window admits exactly its limit.
func TestQuotaFixedWindowReturn(t *testing.T) {
	t.Parallel()
	c := single(t)
	l := core.PerMinute(500).WithAlgorithm(core.FixedWindow) // leases of 1 s
	r := newQuotaRig(t, c, l, 4, 0, 0)
	turn := coretest.T0.Truncate(time.Minute).Add(time.Minute)
	r.clk.Set(turn.Add(-500 * time.Millisecond)) // half a second before the window turns
	first := r.hammer("w", 8, 4)                 // 128 calls: leases hold units
	if first > 500 {
		t.Fatalf("the first window admitted %d", first)
	}
	r.clk.Advance(600 * time.Millisecond) // the next window
	// A plain limiter charges the new window first, so that a refund
	// into it would show; then the leases' units go back, too late for
	// their window.
	early := r.spend(c, l, "w", 10)
	r.fire()
	next := r.drain("w", 16, 20, time.Second) // 1280 calls a round
	if early+next != 500 {
		t.Errorf("the next window admitted %d + %d, want exactly its limit 500 (the first admitted %d)", early, next, first)
	}
	var ret int64
	for _, lim := range r.lims {
		_, _, n := redisstore.QuotaCounts(lim)
		ret += n
	}
	t.Logf("first window %d, next %d; %d units given back", first, next, ret)
}

// TestQuotaRefused: what local quota cannot do fails at construction,
// with the reason.
func TestQuotaRefused(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	q := redisstore.WithLocalQuota(redisstore.LocalQuota{})
	for _, tt := range []struct {
		name string
		make func() error
		want string
	}{
		{"sliding window", func() error {
			_, err := redisstore.New(c, core.PerMinute(5).WithAlgorithm(core.SlidingWindow), q)
			return err
		}, "not sliding-window"},
		{"leaky bucket", func() error {
			_, err := redisstore.New(c, core.PerMinute(5).WithMaxDelay(time.Second), q)
			return err
		}, "not leaky-bucket"},
		{"concurrency", func() error { _, err := redisstore.New(c, core.InFlight(5), q); return err }, "not concurrency"},
		{"overdraft", func() error { _, err := redisstore.New(c, core.PerMinute(5).WithOverdraft(), q); return err }, "cannot lend"},
		{"stack layer", func() error {
			_, err := redisstore.NewStack(c, []core.Limit{core.PerMinute(5), core.PerHour(50).WithAlgorithm(core.SlidingLog)}, q)
			return err
		}, "stack limit 1: redisstore: local quota leases GCRA, TokenBucket and FixedWindow limits, not sliding-log"},
		{"length", func() error {
			_, err := redisstore.New(c, core.PerMinute(5), redisstore.WithLocalQuota(redisstore.LocalQuota{Length: time.Hour}))
			return err
		}, "Length must be from 0"},
		{"hot", func() error {
			_, err := redisstore.New(c, core.PerMinute(5), redisstore.WithLocalQuota(redisstore.LocalQuota{Hot: -1}))
			return err
		}, "Hot must be >= 0"},
		{"keys", func() error {
			_, err := redisstore.New(c, core.PerMinute(5), redisstore.WithLocalQuota(redisstore.LocalQuota{MaxKeys: -1}))
			return err
		}, "MaxKeys must be >= 0"},
	} {
		if err := tt.make(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}

// TestQuotaHolders: Redis counts the instances holding a lease on a key,
// each grant reports the count (which sizes the next lease: see
// TestQuotaSize), and an instance stops counting a lease's length after
// its lease has ended (until then it may be between two leases).
func TestQuotaHolders(t *testing.T) {
	t.Parallel()
	c := single(t)
	const burst = 1000
	l := core.Limit{Events: burst, Period: burst * 5 * time.Minute}.WithAlgorithm(core.GCRA) // leases of 1 s
	r := newQuotaRig(t, c, l, 4, 0, 1)
	for i := range 4 {
		for range 20 {
			r.allow(i, "k")
		}
		if _, holders := redisstore.QuotaHeld(r.lims[i], "k"); holders != int64(i+1) {
			t.Fatalf("instance %d's grant counted %d holders, want %d", i, holders, i+1)
		}
	}
	// Every lease has ended, not a lease's length ago: instance 0 asks
	// again, and the others still count.
	r.clk.Advance(1100 * time.Millisecond)
	r.fire()
	for range 20 {
		r.allow(0, "k")
	}
	if _, holders := redisstore.QuotaHeld(r.lims[0], "k"); holders != 4 {
		t.Errorf("a lease after the others' leases ended, the grant counted %d holders, want 4", holders)
	}
	// A lease's length more: instance 0 asks again, alone.
	r.clk.Advance(2100 * time.Millisecond)
	r.fire()
	for range 20 {
		r.allow(0, "k")
	}
	if _, holders := redisstore.QuotaHeld(r.lims[0], "k"); holders != 1 {
		t.Errorf("two leases after the others' leases ended, the grant counted %d holders, want 1", holders)
	}
}

// TestQuotaStack: leases on a stack are all or nothing. 4 instances × 16
// goroutines on a stack of a GCRA limit (burst 600, refilling one unit
// every 5 minutes) and a fixed window of 500 a minute admit at most 500,
// and exactly 500 once the leases are back; each layer was charged
// exactly what was admitted (the GCRA layer has 100 left when the window
// turns).
func TestQuotaStack(t *testing.T) {
	t.Parallel()
	c := single(t)
	layers := []core.Limit{
		core.Limit{Events: 600, Period: 600 * 5 * time.Minute, Name: "bucket"}.WithAlgorithm(core.GCRA),
		core.PerMinute(500).WithName("window").WithAlgorithm(core.FixedWindow),
	}
	r := newStackRig(t, c, layers, 4)
	turn := coretest.T0.Truncate(time.Minute).Add(time.Minute)
	r.clk.Set(turn.Add(-30 * time.Second))
	first := r.hammer("s", 16, 4) // 256 calls: leases hold units when the clock moves
	if first > 500 {
		t.Fatalf("the fleet admitted %d, more than the tighter layer's 500", first)
	}
	r.clk.Advance(2 * time.Second) // the leases have ended; the window has not
	r.fire()
	second := r.drain("s", 16, 20, time.Second)
	if first+second != 500 {
		t.Errorf("admitted %d + %d once the leases were back, want exactly 500", first, second)
	}
	// The next window: the fixed window is whole again, the bucket not.
	// The grants asked ahead by the refused keys (askAhead) run now, and
	// their leases end unspent a lease later.
	r.clk.Set(turn.Add(time.Second))
	r.fire()
	r.clk.Advance(2 * time.Second)
	r.fire()
	// A plain stack on the same keys: the GCRA layer has 100 left.
	plain, err := redisstore.NewStack(c, layers, redisstore.WithClock(r.clk), redisstore.WithScriptClock(r.clk),
		redisstore.WithPrefix(r.prefix), redisstore.WithDenyCache(0))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; n < 600; n++ {
		d, err := plain.Allow(context.Background(), "s", 1)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			if d.Limit.Name != "bucket" {
				t.Errorf("the plain stack's refusal names %q, want the bucket", d.Limit.Name)
			}
			break
		}
	}
	if n != 100 {
		t.Errorf("the GCRA layer had %d left after 500 admissions, want 100 (each layer charged exactly the admissions)", n)
	}
	var grants uint64
	var back int64
	for _, lim := range r.all {
		g, _, ret := redisstore.QuotaCounts(lim)
		grants, back = grants+g, back+ret
	}
	if back == 0 {
		t.Errorf("no unit was given back")
	}
	t.Logf("%d + %d admitted; %d grants, %d units given back", first, second, grants, back)
}

// TestQuotaStackWindowReturn: a stack's lease ends with its fixed-window
// layer's window, and its units, returned after the window has turned,
// reach the other layers but not the next window.
func TestQuotaStackWindowReturn(t *testing.T) {
	t.Parallel()
	c := single(t)
	layers := []core.Limit{
		core.Limit{Events: 100000, Period: 10000 * time.Minute, Name: "bucket"}.WithAlgorithm(core.GCRA),
		core.PerMinute(500).WithName("window").WithAlgorithm(core.FixedWindow),
	}
	r := newStackRig(t, c, layers, 4)
	turn := coretest.T0.Truncate(time.Minute).Add(time.Minute)
	r.clk.Set(turn.Add(-500 * time.Millisecond))
	first := r.hammer("w", 8, 4) // 128 calls: leases hold units
	r.clk.Set(turn.Add(100 * time.Millisecond))
	plain, err := redisstore.NewStack(c, layers, redisstore.WithClock(r.clk), redisstore.WithScriptClock(r.clk),
		redisstore.WithPrefix(r.prefix), redisstore.WithDenyCache(0))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // the new window, charged before the returns arrive
		if d, err := plain.Allow(context.Background(), "w", 1); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	r.fire()
	next := r.drain("w", 16, 40, time.Second)
	if 10+next != 500 {
		t.Errorf("the next window admitted 10 + %d, want exactly its limit 500 (the first admitted %d)", next, first)
	}
	var back int64
	for _, lim := range r.all {
		_, _, n := redisstore.QuotaCounts(lim)
		back += n
	}
	if back == 0 {
		t.Errorf("no unit was given back: the test shows nothing")
	}
}
