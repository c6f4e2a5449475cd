package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// outageRig starts a server, a client of it that gives up fast once the
// server is killed, a fake clock and its timers.
func outageRig(t *testing.T) (*redistest.Server, *redis.Client, *coretest.Clock, *timers) {
	t.Helper()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialerRetries: 1, DialerRetryTimeout: deadDialPause})
	t.Cleanup(func() { c.Close() })
	clk := coretest.NewClock(coretest.T0)
	return srv, c, clk, &timers{clk: clk}
}

// timers are lease ends on a fake clock: each fires once the clock has
// reached it (fire).
type timers struct {
	clk *coretest.Clock
	mu  sync.Mutex
	due []timer
}

type timer struct {
	at int64
	f  func()
}

func (ts *timers) after(d time.Duration, f func()) func() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.due = append(ts.due, timer{ts.clk.Now() + int64(d), f})
	return func() bool { return false }
}

// fire runs the timers due by now.
func (ts *timers) fire() {
	ts.mu.Lock()
	var now []func()
	rest := ts.due[:0]
	for _, t := range ts.due {
		if t.at <= ts.clk.Now() {
			now = append(now, t.f)
		} else {
			rest = append(rest, t)
		}
	}
	ts.due = rest
	ts.mu.Unlock()
	for _, f := range now {
		f()
	}
}

// degradedFleet is what a fleet of 4 instances admitted on one hot key
// through a Redis outage, with the demand of each at twice the limit.
type degradedFleet struct {
	each          [4]int // admitted per instance during the outage
	total, leased int    // admitted in all, and from leases taken before it
	local         int    // decisions made without a lease during the outage
	localHealth   uint64 // what Health counted as local decisions
	// fresh is what instance 0 admitted at the outage's start of 200 calls
	// at one instant for a key it never saw.
	fresh int
}

// healthLimiter is a Limiter or a Dynamic.
type healthLimiter interface {
	core.Limiter
	Health() core.Health
}

// runDegradedFleet runs 4 instances of lim on a fake clock, in steps of
// 10 ms, each asking twice per step (twice the limit in all of 100/s,
// 8 times it together) for one key: up for 1 s, then Redis killed and
// 10 s more. With quota the instances use local quota; kind is what they
// are: "limiter", "dynamic" (whose limit function gives lim) or "stack"
// (of lim and a fixed window of 2,000 per 10 s, which never binds).
func runDegradedFleet(t *testing.T, lim core.Limit, quota bool, kind string) degradedFleet {
	t.Helper()
	srv, c, clk, ts := outageRig(t)
	prefix := fmt.Sprintf("degraded%d:", time.Now().UnixNano())
	var lims [4]healthLimiter
	for i := range lims {
		opts := []redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(prefix), redisstore.WithTimeout(5 * time.Second),
			redisstore.WithAfterFunc(ts.after), redisstore.WithFallback(core.WithClock(clk))}
		if quota {
			opts = append(opts, redisstore.WithLocalQuota(redisstore.LocalQuota{}))
		}
		var err error
		switch kind {
		case "limiter":
			lims[i], err = redisstore.New(c, lim, opts...)
		case "dynamic":
			lims[i], err = redisstore.NewDynamic(c, func(string) core.Limit { return lim }, opts...)
		case "stack":
			lims[i], err = redisstore.NewStack(c, []core.Limit{lim, {Events: 2000, Period: 10 * time.Second, Algorithm: core.FixedWindow}}, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	const step = 10 * time.Millisecond
	var f degradedFleet
	run := func(span time.Duration, down bool) {
		for range span / step {
			for i, l := range lims {
				for range 2 {
					d, err := l.Allow(context.Background(), "hot", 1)
					if err != nil {
						t.Fatalf("instance %d at %v: %v", i, time.Duration(clk.Now()-coretest.T0.UnixNano()), err)
					}
					if quota {
						// A replaced lease's units go back in the
						// background: back before the next call, so that
						// the run is the same each time.
						redisstore.QuotaSettle(l)
					}
					if !down {
						continue
					}
					if d.Allowed {
						f.each[i]++
						f.total++
						if d.Leased {
							f.leased++
						}
					}
					if !d.Leased {
						f.local++
					}
				}
			}
			clk.Advance(step)
			ts.fire()
			if quota {
				for _, l := range lims {
					redisstore.QuotaSettle(l)
				}
			}
		}
	}
	run(time.Second, false)
	var before uint64
	for _, l := range lims {
		before += l.Health().LocalDecisions
	}
	srv.Kill()
	for range 200 {
		d, err := lims[0].Allow(context.Background(), "fresh", 1)
		if err != nil {
			t.Fatalf("a fresh key: %v", err)
		}
		if d.Allowed {
			f.fresh++
		}
		// A stack names its layers (Name aside, the same limit).
		if named := d.Limit; kind == "stack" && named.Name != "" {
			named.Name = lim.Name
			d.Limit = named
		}
		if d.Limit != lim {
			t.Fatalf("a fresh key's decision names %v, want the limit %v", d.Limit, lim)
		}
	}
	before += 200
	run(10*time.Second, true)
	for _, l := range lims {
		f.localHealth += l.Health().LocalDecisions
	}
	f.localHealth -= before
	return f
}

// TestQuotaDegradedFleet: 4 instances made WithFallback on one hot key, a
// demand of 8 times the limit (100/s), through a 10 s Redis outage on a
// fake clock (the runs differ by a few units from one to the next, as the
// calls to the dead server fail in real time: each instance's share is
// checked within 10 units). With local quota each falls back to its share, a quarter of
// the limit (4 held leases at the last grant), warm from that grant: the
// shared state had nothing left, so each share starts empty and admits a
// quarter of the rate, and the 4 together admit the limit over the outage
// (a share started whole would add its burst of 25 each). A key never
// granted starts whole, with the share of the latest grant's holders.
// Without local quota each falls back to the whole limit from a cold
// start: 4 times the limit and 4 bursts more. Health counts every
// decision made without a lease as local.
func TestQuotaDegradedFleet(t *testing.T) {
	t.Parallel()
	const outage = 10 * 100 // the limit over 10 s
	for _, tc := range []struct {
		name  string
		lim   core.Limit
		quota bool
		kind  string
		// What each instance admits over the outage, and of a fresh key at
		// once.
		each  [4]int
		fresh int
		// The ratio's bounds: the acceptance with local quota.
		low, high float64
	}{
		{"GCRA, local quota", core.PerSecond(100).WithAlgorithm(core.GCRA), true, "limiter", [4]int{250, 250, 250, 250}, 25, 0.8, 1.1},
		// A larger burst changes nothing: the shared state was empty at
		// the last grants, and so is each share (a fresh key gets 400/4).
		{"GCRA burst 400, local quota", core.PerSecond(100).WithAlgorithm(core.GCRA).WithBurst(400), true, "limiter", [4]int{250, 250, 250, 250}, 100, 0.8, 1.1},
		{"GCRA, Dynamic, local quota", core.PerSecond(100).WithAlgorithm(core.GCRA), true, "dynamic", [4]int{250, 250, 250, 250}, 25, 0.8, 1.1},
		{"GCRA, stack, local quota", core.PerSecond(100).WithAlgorithm(core.GCRA), true, "stack", [4]int{250, 250, 250, 250}, 25, 0.8, 1.1},
		{"token bucket, local quota", core.PerSecond(100), true, "limiter", [4]int{250, 250, 250, 250}, 25, 0.8, 1.1},
		{"fixed window, local quota", core.PerSecond(100).WithAlgorithm(core.FixedWindow), true, "limiter", [4]int{250, 250, 250, 250}, 25, 0.8, 1.1},
		// 100 at once and 999 more over 9.99 s of calls.
		{"GCRA, no local quota", core.PerSecond(100).WithAlgorithm(core.GCRA), false, "limiter", [4]int{1099, 1099, 1099, 1099}, 100, 4.0, 4.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := runDegradedFleet(t, tc.lim, tc.quota, tc.kind)
			ratio := float64(f.total) / outage
			t.Logf("admitted %d (%v per instance, %d from leases) over a limit of %d in the outage: %.3f×", f.total, f.each, f.leased, outage, ratio)
			// Each instance's share over the outage, give or take what its
			// last lease held and the instant of its last grant: 10 units
			// at most, a tenth of a second of the limit.
			for i := range f.each {
				if d := f.each[i] - tc.each[i]; d < -10 || d > 10 || f.fresh != tc.fresh {
					t.Errorf("admitted %v per instance, %d of a fresh key; want %v within 10 each, %d", f.each, f.fresh, tc.each, tc.fresh)
					break
				}
			}
			if ratio < tc.low || ratio > tc.high {
				t.Errorf("the fleet admitted %.3f× the limit over the outage, want %.1f× to %.1f×", ratio, tc.low, tc.high)
			}
			if f.localHealth != uint64(f.local) {
				t.Errorf("Health counted %d local decisions, the fleet made %d without a lease", f.localHealth, f.local)
			}
		})
	}
}

// TestQuotaDegradedConcurrent: 4 instances of 8 goroutines each ask at
// one instant, Redis dead, for a key each instance saw granted among 4
// holders with the shared state whole, and for a key none saw: each
// instance admits exactly its share's burst of each, however its calls
// interleave, and counts each decision once in Health.
func TestQuotaDegradedConcurrent(t *testing.T) {
	t.Parallel()
	srv, c, clk, ts := outageRig(t)
	lim := core.PerSecond(100).WithAlgorithm(core.GCRA)
	prefix := fmt.Sprintf("degradedc%d:", time.Now().UnixNano())
	var lims [4]*redisstore.Limiter
	for i := range lims {
		lims[i] = redisstore.MustNew(c, lim, redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(prefix), redisstore.WithTimeout(5*time.Second), redisstore.WithAfterFunc(ts.after),
			redisstore.WithFallback(), redisstore.WithLocalQuota(redisstore.LocalQuota{Hot: 1}))
	}
	ctx := context.Background()
	// Three rounds of one call each: a key is hot at once (Hot 1), and
	// its first lease holds 2 units (the demand and a quarter more, rounded
	// up), spent by the second round; the third round's grants see 4
	// holders.
	for range 3 {
		for _, l := range lims {
			if d, err := l.Allow(ctx, "shared", 1); err != nil || !d.Allowed {
				t.Fatalf("a first lease: %+v, %v", d, err)
			}
			redisstore.QuotaSettle(l)
		}
	}
	for i, l := range lims {
		if _, h := redisstore.QuotaHeld(l, "shared"); h != 4 {
			t.Fatalf("instance %d saw %d holders at its last grant, want 4", i, h)
		}
	}
	srv.Kill()
	// Past the leases' end: every call falls back.
	clk.Advance(time.Second)
	ts.fire()
	var before [4]uint64
	for i, l := range lims {
		redisstore.QuotaSettle(l)
		before[i] = l.Health().LocalDecisions
	}
	const calls = 8 * 20 // more than the whole burst
	var admitted [4]map[string]*atomic.Int64
	var wg sync.WaitGroup
	for i, l := range lims {
		admitted[i] = map[string]*atomic.Int64{"shared": {}, "fresh": {}}
		for range 8 {
			wg.Go(func() {
				for range calls / 8 {
					for _, key := range []string{"shared", "fresh"} {
						d, err := l.Allow(ctx, key, 1)
						if err != nil {
							t.Errorf("instance %d, %s: %v", i, key, err)
							return
						}
						if d.Allowed {
							admitted[i][key].Add(1)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	for i, l := range lims {
		// 25: a quarter of the burst, the shared state whole at the grant
		// and refilled since; the fresh key's holders are the latest
		// grant's, 4.
		if s, f := admitted[i]["shared"].Load(), admitted[i]["fresh"].Load(); s != 25 || f != 25 {
			t.Errorf("instance %d admitted %d of the shared key and %d of the fresh one, want 25 and 25", i, s, f)
		}
		if n := l.Health().LocalDecisions - before[i]; n != 2*calls {
			t.Errorf("instance %d: Health counted %d local decisions, want %d", i, n, 2*calls)
		}
	}
}

// TestQuotaDegradedDynamic: a Dynamic's key whose limit changes while
// Redis is dead gets a share of its new limit, whole (no grant was made
// under it), among the latest grant's holders; decisions name the key's
// limit, and a refund goes back to its share.
func TestQuotaDegradedDynamic(t *testing.T) {
	t.Parallel()
	srv, c, clk, ts := outageRig(t)
	low, high := core.PerSecond(100).WithAlgorithm(core.GCRA), core.PerSecond(200).WithAlgorithm(core.GCRA)
	var raised atomic.Bool
	limitOf := func(string) core.Limit {
		if raised.Load() {
			return high
		}
		return low
	}
	prefix := fmt.Sprintf("degradedd%d:", time.Now().UnixNano())
	var lims [2]*redisstore.Dynamic
	for i := range lims {
		d, err := redisstore.NewDynamic(c, limitOf, redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
			redisstore.WithPrefix(prefix), redisstore.WithTimeout(5*time.Second), redisstore.WithAfterFunc(ts.after),
			redisstore.WithFallback(), redisstore.WithLocalQuota(redisstore.LocalQuota{Hot: 1}))
		if err != nil {
			t.Fatal(err)
		}
		lims[i] = d
	}
	ctx := context.Background()
	for range 3 { // as in TestQuotaDegradedConcurrent: the third grants see 2 holders
		for _, l := range lims {
			if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
				t.Fatalf("a first lease: %+v, %v", d, err)
			}
			redisstore.QuotaSettle(l)
		}
	}
	srv.Kill()
	clk.Advance(time.Second)
	ts.fire()
	redisstore.QuotaSettle(lims[0])
	burst := func(n int, want core.Limit) int {
		t.Helper()
		admitted := 0
		for range n {
			d, err := lims[0].Allow(ctx, "k", 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Limit != want {
				t.Fatalf("a decision names %v, want the key's limit %v", d.Limit, want)
			}
			if d.Allowed {
				admitted++
			}
		}
		return admitted
	}
	before := lims[0].Health().LocalDecisions
	if n := burst(60, low); n != 50 {
		t.Errorf("under %v among 2 holders: %d admitted at once, want 50", low, n)
	}
	raised.Store(true)
	if n := burst(150, high); n != 100 {
		t.Errorf("under %v among 2 holders: %d admitted at once, want 100", high, n)
	}
	if err := lims[0].Refund(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	if n := burst(20, high); n != 10 {
		t.Errorf("after a refund of 10: %d admitted, want 10", n)
	}
	if n := lims[0].Health().LocalDecisions - before; n != 60+150+20 {
		t.Errorf("Health counted %d local decisions, want %d", n, 60+150+20)
	}
}
