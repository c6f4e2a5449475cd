package core_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// sprayLimits are the limits the spray tests run under: 1000 an hour (the
// issue's), under every algorithm. The leaky bucket may queue a minute, so
// that a fresh key's whole limit is more than one request.
var sprayLimits = []core.Limit{
	core.PerHour(1000),
	core.PerHour(1000).WithAlgorithm(core.GCRA),
	core.PerHour(1000).WithAlgorithm(core.FixedWindow),
	core.PerHour(1000).WithAlgorithm(core.SlidingWindow),
	core.PerHour(1000).WithSubWindows(10),
	core.PerHour(1000).WithAlgorithm(core.SlidingLog),
	core.PerHour(1000).WithMaxDelay(time.Minute),
	core.PerHour(1000).WithWarmUp(10*time.Minute, 3),
	core.InFlight(1000),
}

// sprayKey is the i-th key of a spray: one IPv6 /48 cut into /64s, as
// keyfunc's client IP groups them, or API keys a client makes up.
func sprayKey(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("2001:db8:7:%x::/64", i/2)
	}
	return fmt.Sprintf("sk_live_%016x", uint64(i)*0x9e3779b97f4a7c15)
}

// sprayed is a limiter and its twin: both see the same real clients'
// traffic; only the limiter sees the spray. Both start at t0 on one clock.
type sprayed struct {
	lim, twin core.Limiter
}

// play sends key's request of cost to both, at the same instant, and fails
// unless the two decisions agree (a lease is released at once), so that
// the spray is seen to change nothing for key.
func (s sprayed) play(t *testing.T, key string, cost int) core.Decision {
	t.Helper()
	d, tw := allow(t, s.lim, key, cost), allow(t, s.twin, key, cost)
	if !d.Lease.IsZero() {
		d.Lease.Release(ctx)
		tw.Lease.Release(ctx)
	}
	d.Lease, tw.Lease = core.Lease{}, core.Lease{}
	if d != tw {
		t.Fatalf("%s (cost %d): %+v after the spray, %+v without it", key, cost, d, tw)
	}
	return d
}

// TestSprayLeavesFreshClientsTheirLimit plays the attack on every
// algorithm: a client sprays distinct keys, each used once, well past the
// table's capacity. Then 20 fresh clients each still get their whole limit,
// decision for decision what they would get from a limiter that never saw
// the spray, and the real clients who were there before, one drained and
// one past half its quota, keep their state exactly: the spray hands them
// nothing back. (Before, the spray filled the table and every new key
// shared one overflow quota the spray had drained: 0 of 20 got a request
// through for the rest of the window, under the windows, and until one
// emission interval passed under the buckets.)
func TestSprayLeavesFreshClientsTheirLimit(t *testing.T) {
	t.Parallel()
	capacity, keys := core.DefaultCapacity, 70_000
	if testing.Short() {
		capacity, keys = 4096, 6000
	}
	for _, l := range sprayLimits {
		t.Run(algorithmName(l), func(t *testing.T) {
			t.Parallel()
			clk := coretest.NewClock(t0)
			lim, err := core.New(l, core.WithClock(clk), core.WithCapacity(capacity))
			if err != nil {
				t.Fatal(err)
			}
			twin, err := core.New(l, core.WithClock(clk), core.WithCapacity(capacity))
			if err != nil {
				t.Fatal(err)
			}
			s := sprayed{lim, twin}
			// The real clients: one drains its quota in one request,
			// one spends 600 of its 1000 (concurrency: units held in
			// flight, released only at the end).
			drained := allow(t, lim, "drained", 1000)
			allow(t, twin, "drained", 1000)
			heavy := allow(t, lim, "heavy", 600)
			allow(t, twin, "heavy", 600)
			if !drained.Allowed || !heavy.Allowed {
				t.Fatalf("real clients: %+v, %+v", drained, heavy)
			}
			for i := 0; i < keys; i++ {
				d := allow(t, lim, sprayKey(i), 1)
				if !d.Allowed || d.Overflow {
					t.Fatalf("spray key %d: %+v, want it admitted on its own", i, d)
				}
				if !d.Lease.IsZero() {
					d.Lease.Release(ctx) // the request ended
				}
			}
			if n := lim.Len(); n > capacity {
				t.Fatalf("%d keys tracked, capacity %d", n, capacity)
			}
			for c := 0; c < 20; c++ {
				key := "fresh" + strconv.Itoa(c)
				admitted := 0
				var held []core.Lease
				for {
					d, tw := allow(t, lim, key, 1), allow(t, twin, key, 1)
					if !d.Lease.IsZero() {
						held = append(held, d.Lease, tw.Lease)
					}
					d.Lease, tw.Lease = core.Lease{}, core.Lease{}
					if d != tw {
						t.Fatalf("%s request %d: %+v after the spray, %+v without it", key, admitted+1, d, tw)
					}
					if !d.Allowed {
						break
					}
					admitted++
				}
				for _, ls := range held {
					ls.Release(ctx)
				}
				if admitted == 0 {
					t.Fatalf("%s: nothing admitted", key)
				}
			}
			// The real clients kept their state: their next requests are
			// decided as if there had been no spray.
			for _, key := range []string{"drained", "heavy", "heavy"} {
				s.play(t, key, 1)
			}
			if d := s.play(t, "drained", 1); d.Allowed {
				t.Fatalf("drained: %+v, want it still refused", d)
			}
			if !heavy.Lease.IsZero() {
				drained.Lease.Release(ctx)
				heavy.Lease.Release(ctx)
			}
		})
	}
}

// algorithmName names l's algorithm in subtest names.
func algorithmName(l core.Limit) string {
	if l.SubWindows != 0 {
		return fmt.Sprintf("%v-%d", l.Algorithm, l.SubWindows)
	}
	return l.Algorithm.String()
}

// TestReuseTakesLeastLoss: with the table full and no key idle, a new key
// takes the place of the key whose loss is least, wherever it sits in the
// table, and every other key keeps its state.
func TestReuseTakesLeastLoss(t *testing.T) {
	t.Parallel()
	for _, l := range sprayLimits {
		if l.Algorithm == core.Concurrency {
			continue // a key in flight is never given up (TestReuseKeepsKeysInFlight)
		}
		for _, pos := range []int{0, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d", algorithmName(l), pos), func(t *testing.T) {
				t.Parallel()
				clk := coretest.NewClock(t0)
				lim, err := core.New(l, core.WithClock(clk), core.WithCapacity(8), core.WithShards(1))
				if err != nil {
					t.Fatal(err)
				}
				// Eight keys spend 3 to 10 units, in one request each, but
				// the key at pos spends 1.
				spent := func(i int) int {
					if i == pos {
						return 1
					}
					return 3 + i
				}
				for i := 0; i < 8; i++ {
					if d := allow(t, lim, "k"+strconv.Itoa(i), spent(i)); !d.Allowed {
						t.Fatalf("k%d: %+v", i, d)
					}
				}
				if d := allow(t, lim, "new", 1); !d.Allowed || d.Overflow {
					t.Fatalf("new key: %+v, want it tracked in the cheapest key's place", d)
				}
				if lim.Len() != 8 {
					t.Fatalf("%d keys tracked, want 8", lim.Len())
				}
				// Each key now sends a request as big as the one it sent: the
				// key given up is admitted again (it comes back as new, one
				// unit better off); the others are decided on their state.
				twin, err := core.New(l, core.WithClock(clk), core.WithCapacity(8), core.WithShards(1))
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 8; i++ {
					key := "k" + strconv.Itoa(i)
					if i != pos {
						allow(t, twin, key, spent(i))
					}
				}
				for i := 0; i < 8; i++ {
					key := "k" + strconv.Itoa(i)
					d, tw := allow(t, lim, key, spent(i)), allow(t, twin, key, spent(i))
					if d != tw {
						t.Fatalf("%s: %+v, want %+v", key, d, tw)
					}
				}
			})
		}
	}
}

// TestReuseOnlySpare: a key is given up only while it has spent at most
// half its quota (one unit when the quota is smaller): a new key finding
// the table full of keys that spent more is decided against the overflow
// state, and those keys keep their state.
func TestReuseOnlySpare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l     core.Limit
		spare int // the most units a key may have spent and be given up
	}{
		{core.PerMinute(10), 5},
		{core.PerMinute(10).WithAlgorithm(core.GCRA), 5},
		{core.PerMinute(11).WithAlgorithm(core.FixedWindow), 5},
		{core.PerMinute(10).WithAlgorithm(core.SlidingWindow), 5},
		{core.PerMinute(10).WithSubWindows(5), 5},
		{core.PerMinute(10).WithAlgorithm(core.SlidingLog), 5},
		// 11 turns: the first at once and 10 within the minute it may wait.
		{core.PerMinute(10).WithMaxDelay(time.Minute), 5},
		// A quota of one: a key charged once is spare.
		{core.PerMinute(1).WithAlgorithm(core.GCRA), 1},
		{core.PerMinute(10).WithAlgorithm(core.GCRA).WithBurst(1), 1},
		{core.PerMinute(1).WithAlgorithm(core.FixedWindow), 1},
	}
	for _, c := range cases {
		for _, spent := range []int{c.spare, c.spare + 1} {
			if spent > c.l.EffectiveBurst() {
				continue // a quota of one: every key is spare
			}
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d/%d", algorithmName(c.l), c.l.Events, c.l.Period, c.l.EffectiveBurst(), spent), func(t *testing.T) {
				t.Parallel()
				clk := coretest.NewClock(t0)
				lim, err := core.New(c.l, core.WithClock(clk), core.WithCapacity(1))
				if err != nil {
					t.Fatal(err)
				}
				twin, err := core.New(c.l, core.WithClock(clk), core.WithCapacity(1))
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < spent; i++ {
					allow(t, twin, "old", 1)
					if d := allow(t, lim, "old", 1); !d.Allowed {
						t.Fatalf("old, request %d: %+v", i, d)
					}
				}
				clk.Advance(time.Millisecond)
				d := allow(t, lim, "new", 1)
				if reused := !d.Overflow; reused != (spent <= c.spare) {
					t.Fatalf("new key with the table's key %d units spent: %+v, want it reused: %v", spent, d, spent <= c.spare)
				}
				if spent <= c.spare {
					return
				}
				// Kept: old's next request is decided on its state.
				if d, tw := allow(t, lim, "old", 1), allow(t, twin, "old", 1); d != tw {
					t.Fatalf("old after the new key: %+v, want %+v", d, tw)
				}
			})
		}
	}
}

// TestReuseKeepsKeysInFlight: under Concurrency a key holding units is
// never given up, however little it holds (its leases would give back
// nothing): a new key then overflows; released, the key is idle and
// dropped.
func TestReuseKeepsKeysInFlight(t *testing.T) {
	t.Parallel()
	lim, _ := newLimiter(t, core.InFlight(10), core.WithCapacity(1))
	d := allow(t, lim, "old", 1)
	if d2 := allow(t, lim, "new", 1); !d2.Overflow {
		t.Fatalf("new key with a key in flight: %+v, want overflow", d2)
	}
	d.Lease.Release(ctx)
	if d2 := allow(t, lim, "new2", 1); d2.Overflow || !d2.Allowed {
		t.Fatalf("new key once the key in flight released: %+v", d2)
	}
}

// TestSprayStack: a stack's layers give up their cheapest keys alike, so a
// spray leaves fresh clients of a stack their whole limit too.
func TestSprayStack(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	layers := []core.Limit{core.PerMinute(20), core.PerHour(1000).WithAlgorithm(core.FixedWindow), core.PerHour(100).WithAlgorithm(core.SlidingLog)}
	s, err := core.NewStack(layers, core.WithClock(clk), core.WithCapacity(1024))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		if d := allow(t, s, sprayKey(i), 1); !d.Allowed || d.Overflow {
			t.Fatalf("spray key %d: %+v", i, d)
		}
	}
	for c := 0; c < 20; c++ {
		key := "fresh" + strconv.Itoa(c)
		for i := 0; i < 20; i++ {
			if d := allow(t, s, key, 1); !d.Allowed || d.Overflow || d.Remaining != 19-i {
				t.Fatalf("%s request %d: %+v, want admitted on its own with %d left", key, i, d, 19-i)
			}
		}
		if d := allow(t, s, key, 1); d.Allowed {
			t.Fatalf("%s past its limit: %+v", key, d)
		}
	}
}

// TestReuseWorkIsAmortised counts the keys examined per operation while a
// full table gives up keys: spray keys turning over, light keys turning
// over behind drained ones that fill all but a few places, and a table of
// drained keys refusing each new key, for an algorithm indexed by idle
// instant and one indexed by rank. The bound is TestEvictionWorkIsAmortised's.
func TestReuseWorkIsAmortised(t *testing.T) {
	t.Parallel()
	const n = 1024
	workloads := map[string]func(lim *core.Keyed) int{
		"spray": func(lim *core.Keyed) int {
			for i := 0; i < 20_000; i++ {
				allow(t, lim, sprayKey(i), 1)
			}
			return 20_000
		},
		"drained-front": func(lim *core.Keyed) int {
			for i := 0; i < n-4; i++ {
				allow(t, lim, "drained"+strconv.Itoa(i), 10)
			}
			for i := 0; i < 20_000; i++ {
				allow(t, lim, "light"+strconv.Itoa(i), 1)
			}
			return n - 4 + 20_000
		},
		"drained": func(lim *core.Keyed) int {
			for i := 0; i < 20_000; i++ {
				allow(t, lim, "drained"+strconv.Itoa(i), 10)
			}
			return 20_000
		},
	}
	for _, alg := range []core.Algorithm{core.GCRA, core.FixedWindow, core.SlidingWindow} {
		for name, run := range workloads {
			t.Run(alg.String()+"/"+name, func(t *testing.T) {
				t.Parallel()
				lim, _ := newLimiter(t, core.PerMinute(10).WithAlgorithm(alg), core.WithCapacity(n), core.WithShards(1))
				ops := run(lim)
				per := float64(lim.Examined()) / float64(ops)
				t.Logf("%v %s: %.2f keys examined per operation", alg, name, per)
				if per > 35 {
					t.Fatalf("%.1f keys examined per operation, want at most 35", per)
				}
			})
		}
	}
}
