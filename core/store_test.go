package core_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// drain spends key's whole quota under lim and checks that it is drained.
func drain(t testing.TB, lim *core.Keyed, key string) {
	t.Helper()
	for allow(t, lim, key, 1).Allowed {
	}
}

// TestDrainedKeysDoNotBlockEviction: 300 drained keys (an attacker's, or a
// few heavy users') sit at the old end of every shard. New clients, one
// request each, arrive every 10 ms and are whole again 36 s later, so about
// 3 900 keys are live at any time, under the capacity of 4 096: none may be
// refused. (Looking only at the two oldest keys of a shard refused 89%.)
func TestDrainedKeysDoNotBlockEviction(t *testing.T) {
	t.Parallel()
	lim, clk := newLimiter(t, core.PerHour(100), core.WithCapacity(4096))
	for i := 0; i < 300; i++ {
		drain(t, lim, "drained"+strconv.Itoa(i))
	}
	refused, overflow := 0, 0
	for i := 0; i < 36_000; i++ {
		clk.Advance(10 * ms)
		d := allow(t, lim, "client"+strconv.Itoa(i), 1)
		if !d.Allowed {
			refused++
		}
		if d.Overflow {
			overflow++
		}
	}
	if refused != 0 || overflow != 0 {
		t.Fatalf("%d of 36000 new clients refused, %d decided in overflow; want 0 and 0", refused, overflow)
	}
	// The drained keys are still live (an hour has not passed) and must be
	// still tracked with what they refilled in 6 minutes (10 requests),
	// never a fresh burst: none was evicted to make room.
	for i := 0; i < 300; i++ {
		if d := allow(t, lim, "drained"+strconv.Itoa(i), 1); d.Remaining > 9 || d.Overflow {
			t.Fatalf("drained key %d: %+v, want it still tracked", i, d)
		}
	}
}

// TestHeavyUsersDoNotBlockEviction: one client in a thousand is heavy and
// drains its key; the others send one request each. (The two-oldest rule
// refused about 20% of the light clients.)
func TestHeavyUsersDoNotBlockEviction(t *testing.T) {
	t.Parallel()
	lim, clk := newLimiter(t, core.PerHour(100), core.WithCapacity(4096))
	refused, light := 0, 0
	for i := 0; i < 36_000; i++ {
		clk.Advance(10 * ms)
		key := "client" + strconv.Itoa(i)
		if i%1000 == 0 {
			drain(t, lim, key)
			continue
		}
		light++
		if d := allow(t, lim, key, 1); !d.Allowed || d.Overflow {
			refused++
		}
	}
	if refused != 0 {
		t.Fatalf("%d of %d light clients refused or sent to overflow, want 0", refused, light)
	}
}

// TestIdleKeyFoundAnywhere: whenever a full shard holds a key whose quota is
// whole again, a new key takes its place and never lands in overflow,
// wherever that key sits in recency order, for every algorithm. The idle key
// got there by time passing (a bucket refilled: drained keys stay live
// longer) or by a refund (any algorithm).
func TestIdleKeyFoundAnywhere(t *testing.T) {
	t.Parallel()
	const n = 64
	for _, alg := range algorithms {
		for _, how := range []string{"timed", "refunded"} {
			if how == "timed" && (alg == core.FixedWindow || alg == core.SlidingWindow || alg == core.SlidingLog) {
				continue // every key of a window ends with it
			}
			for _, pos := range []int{0, 1, 2, n / 2, n - 2, n - 1} {
				t.Run(fmt.Sprintf("%v/%s/%d", alg, how, pos), func(t *testing.T) {
					t.Parallel()
					// 10 per minute: one request is whole again after 6 s,
					// a drained key after a minute.
					lim, clk := newLimiter(t, core.PerMinute(10).WithAlgorithm(alg), core.WithCapacity(n), core.WithShards(1))
					for i := 0; i < n; i++ {
						if i != pos {
							drain(t, lim, "drained"+strconv.Itoa(i))
							continue
						}
						allow(t, lim, "light", 1)
						if how == "refunded" {
							if err := lim.Refund(ctx, "light", 1); err != nil {
								t.Fatal(err)
							}
						}
					}
					if how == "timed" {
						clk.Advance(6 * time.Second)
					}
					d := allow(t, lim, "new", 1)
					if !d.Allowed || d.Overflow {
						t.Fatalf("new key with an idle key at position %d: %+v", pos, d)
					}
					if lim.Len() != n {
						t.Fatalf("tracked %d, want %d", lim.Len(), n)
					}
					// The idle key made room; every drained key is still there.
					for i := 0; i < n; i++ {
						if i == pos {
							continue
						}
						// At most the token refilled meanwhile, never a fresh burst.
						if d := allow(t, lim, "drained"+strconv.Itoa(i), 1); d.Remaining > 0 || d.Overflow {
							t.Fatalf("drained key %d was evicted: %+v", i, d)
						}
					}
				})
			}
		}
	}
}

// TestEvictionWorkIsAmortised counts the keys examined to find idle ones per
// operation (new key or charge) under workloads built against the idle
// index: drained keys filling all but a few places while light keys turn
// over behind them, a table full of live keys turning over in arrival order,
// and keys charged again just before they would be whole (so that indexed
// instants go stale). The bound is the one index.go argues: two keys at the
// old end, one candidate, and 2n/idxCap = 32 keys of rescan per candidate,
// which a scan of the shard per new key (n = 1024) would exceed thirty times
// over.
func TestEvictionWorkIsAmortised(t *testing.T) {
	t.Parallel()
	const n = 1024
	// Each workload returns how many operations it made.
	workloads := map[string]func(lim *core.Keyed, advance func(time.Duration)) int{
		"drained-front": func(lim *core.Keyed, advance func(time.Duration)) int {
			for i := 0; i < n-4; i++ {
				drain(t, lim, "drained"+strconv.Itoa(i))
			}
			inserts := 0
			for i := 0; i < 20_000; i++ {
				advance(2 * time.Second)
				allow(t, lim, "light"+strconv.Itoa(i), 1)
				inserts++
			}
			return inserts
		},
		"full-fifo": func(lim *core.Keyed, advance func(time.Duration)) int {
			inserts := 0
			for i := 0; i < 50_000; i++ {
				advance(5 * ms)
				allow(t, lim, "k"+strconv.Itoa(i), 1)
				inserts++
			}
			return inserts
		},
		"recharged": func(lim *core.Keyed, advance func(time.Duration)) int {
			inserts := 0
			for i := 0; i < 20_000; i++ {
				advance(10 * ms)
				allow(t, lim, "k"+strconv.Itoa(i), 1)
				inserts++
				if i >= 590 {
					// Charge again a key inserted 5.9 s ago, just
					// before it would be whole (6 s).
					allow(t, lim, "k"+strconv.Itoa(i-590), 1)
					inserts++
				}
			}
			return inserts
		},
	}
	for name, run := range workloads {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lim, clk := newLimiter(t, core.PerMinute(10).WithAlgorithm(core.GCRA), core.WithCapacity(n), core.WithShards(1))
			ops := run(lim, clk.Advance)
			per := float64(lim.Examined()) / float64(ops)
			t.Logf("%s: %.2f keys examined per operation", name, per)
			if per > 35 {
				t.Fatalf("%s: %.1f keys examined per operation, want at most 35", name, per)
			}
		})
	}
}

// TestNoRefusalBelowCapacity: until the whole table holds its capacity,
// every new key is tracked on its own, whatever share of the capacity live
// keys fill and however keys spread over shards.
func TestNoRefusalBelowCapacity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		capacity int
		fills    []int // percent of the capacity filled with drained keys
	}{
		{100, []int{50, 90, 99}},
		{1000, []int{50, 99}},
		{65536, []int{99}},
	}
	for _, c := range cases {
		for _, fill := range c.fills {
			t.Run(fmt.Sprintf("%d/%d%%", c.capacity, fill), func(t *testing.T) {
				t.Parallel()
				lim, clk := newLimiter(t, core.PerHour(2), core.WithCapacity(c.capacity))
				if lim.Capacity() != c.capacity {
					t.Fatalf("Capacity() = %d, want %d", lim.Capacity(), c.capacity)
				}
				live := c.capacity * fill / 100
				for i := 0; i < live; i++ {
					drain(t, lim, "live"+strconv.Itoa(i))
				}
				for i := live; i < c.capacity; i++ {
					// Drained too, so that no key is spare at the end.
					for j := 0; j < 2; j++ {
						if d := allow(t, lim, "new"+strconv.Itoa(i), 1); !d.Allowed || d.Overflow {
							t.Fatalf("key %d of %d, request %d, table holding %d: %+v", i+1, c.capacity, j, lim.Len(), d)
						}
					}
				}
				if got := lim.Len(); got != c.capacity {
					t.Fatalf("Len() = %d, want %d", got, c.capacity)
				}
				// Now the table is full of drained keys: the next key overflows.
				if d := allow(t, lim, "one-too-many", 1); !d.Overflow {
					t.Fatalf("key past the capacity: %+v, want an overflow decision", d)
				}
				if got := lim.Len(); got != c.capacity {
					t.Fatalf("Len() = %d after overflow, want %d", got, c.capacity)
				}
				// Once the keys are whole again, a whole table of new keys
				// is tracked again, in whatever shards they land.
				clk.Advance(time.Hour)
				for i := 0; i < c.capacity; i++ {
					if d := allow(t, lim, "later"+strconv.Itoa(i), 1); !d.Allowed || d.Overflow {
						t.Fatalf("key %d after the table emptied: %+v", i, d)
					}
				}
				if got := lim.Len(); got != c.capacity {
					t.Fatalf("Len() = %d, want %d", got, c.capacity)
				}
			})
		}
	}
}

// TestSmallCapacityIsOneShard: a small table is one shard, so that no part of
// it is a handful of keys.
func TestSmallCapacityIsOneShard(t *testing.T) {
	t.Parallel()
	// With one shard, recency order is global: FullEvictLRU drops exactly
	// the least recently charged key of the table.
	lim, _ := newLimiter(t, core.PerHour(1), core.WithCapacity(100), core.WithFullPolicy(core.FullEvictLRU))
	for i := 0; i < 100; i++ {
		drain(t, lim, "k"+strconv.Itoa(i))
	}
	allow(t, lim, "new", 1) // evicts k0, the oldest of the whole table
	if d := allow(t, lim, "k0", 1); !d.Allowed {
		t.Fatalf("k0 should have been the one evicted: %+v", d)
	}
	for i := 2; i < 100; i++ {
		if d := allow(t, lim, "k"+strconv.Itoa(i), 1); d.Allowed {
			t.Fatalf("k%d was evicted instead of k0 or k1", i)
		}
	}
}

// TestOverflowFlag: Decision.Overflow is true exactly when the shared
// overflow state decided, on every path (locked, deny cache, cost > 1).
func TestOverflowFlag(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			lim, clk := newLimiter(t, core.PerMinute(2).WithAlgorithm(alg), core.WithCapacity(2))
			// Both keys drained: neither is spare, so new keys overflow.
			for _, k := range []string{"a", "b", "a"} {
				if d := allow(t, lim, k, 1); !d.Allowed || d.Overflow {
					t.Fatalf("tracked key %s: %+v", k, d)
				}
			}
			if d := allow(t, lim, "b", 1); d.Overflow {
				t.Fatalf("tracked key b: %+v, Overflow set", d)
			}
			for _, cost := range []int{1, 1, 2, 1} { // denied, the second time on via the cache
				if d := allow(t, lim, "a", cost); d.Overflow {
					t.Fatalf("tracked key a cost %d: %+v, Overflow set", cost, d)
				}
			}
			dx := allow(t, lim, "x", 2)
			dy := allow(t, lim, "y", 1)
			if !dx.Overflow || !dx.Allowed || !dy.Overflow || dy.Allowed {
				t.Fatalf("new keys with the table full: x %+v, y %+v; want both Overflow, x allowed, y denied", dx, dy)
			}
			if d := allow(t, lim, "b", 1); d.Overflow {
				t.Fatalf("tracked key b: %+v, Overflow set", d)
			}
			clk.Advance(2 * time.Minute)
			if d := allow(t, lim, "z", 1); !d.Allowed || d.Overflow {
				t.Fatalf("new key once the table had room: %+v", d)
			}
		})
	}
}
