package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// StackStep is one request of a stack's decision table and the decision it
// must get, with the name of the limit it names. A negative Cost is a
// refund, as in [Step].
type StackStep struct {
	At        time.Duration // since T0
	Cost      int
	Allowed   bool
	Limit     string // the name of Decision.Limit
	Remaining int
	Retry     time.Duration
	Reset     time.Duration
	Delay     time.Duration
}

// StackTable is a sequence of requests on one key under a stack of limits,
// with the exact decision each must get. Each layer is a Table whose
// Algorithm, Limit and settings describe it (its Name and Steps are not
// read).
type StackTable struct {
	Name   string
	Layers []Table
	Steps  []StackStep
}

// StackFactory returns a stack of tab's layers that reads its time from
// clock.
type StackFactory func(t testing.TB, tab StackTable, clock *Clock) core.Limiter

// StackTables returns the decision tables every store's stacks must pass.
func StackTables() []StackTable {
	const ms, s = time.Millisecond, time.Second
	return []StackTable{{
		// GCRA at 5/s has an interval of 200 ms and a span of 1 s; the
		// fixed window counts 6 per 10 s, from T0 (a multiple of 10 s
		// since the epoch).
		Name: "gcra-and-fixed-window",
		Layers: []Table{
			{Algorithm: core.GCRA, Limit: core.PerSecond(5).WithName("second")},
			{Algorithm: core.FixedWindow, Limit: core.Limit{Events: 6, Period: 10 * s, Name: "ten"}},
		},
		Steps: []StackStep{
			// Both admit; GCRA has 0 left and is named, with its reset.
			{0, 5, true, "second", 0, 0, 1000 * ms, 0},
			// GCRA refuses for 200 ms; the window would admit but is
			// not charged.
			{0, 1, false, "second", 0, 200 * ms, 1000 * ms, 0},
			// Had the window been charged above, it would hold 7 > 6
			// now. Both have 0 left: the first is named.
			{200 * ms, 1, true, "second", 0, 0, 1000 * ms, 0},
			// The window refuses until it ends; GCRA would admit and is
			// not charged.
			{1200 * ms, 1, false, "ten", 0, 8800 * ms, 8800 * ms, 0},
			{1200 * ms, 3, false, "ten", 0, 8800 * ms, 8800 * ms, 0},
			{1300 * ms, 1, false, "ten", 0, 8700 * ms, 8700 * ms, 0},
			// A new window: GCRA's burst is whole again, so neither
			// denial above charged it.
			{10 * s, 5, true, "second", 0, 0, 1000 * ms, 0},
			{10 * s, 1, false, "second", 0, 200 * ms, 1000 * ms, 0},
			{10*s + 100*ms, 1, false, "second", 0, 100 * ms, 900 * ms, 0},
			// A refund goes to both: GCRA has 1 back, the window 2.
			{10*s + 100*ms, -1, false, "", 0, 0, 0, 0},
			{10*s + 100*ms, 1, true, "second", 0, 0, 1000*ms - 100*ms, 0},
			// GCRA has 1 left (next free at 11.2 s), the window 0.
			{10*s + 500*ms, 1, true, "ten", 0, 0, 9500 * ms, 0},
		},
	}, {
		// Three token buckets: 10/s, 100/min, 3/h (unnamed: named after
		// their limits). The hourly one is the tightest.
		Name: "three-token-buckets",
		Layers: []Table{
			{Algorithm: core.TokenBucket, Limit: core.PerSecond(10)},
			{Algorithm: core.TokenBucket, Limit: core.PerMinute(100)},
			{Algorithm: core.TokenBucket, Limit: core.PerHour(3)},
		},
		Steps: []StackStep{
			{0, 2, true, "3-per-1h0m0s", 1, 0, 40*time.Minute - 1, 0},
			{0, 2, false, "3-per-1h0m0s", 1, 20*time.Minute - 1, 40*time.Minute - 1, 0},
			{0, 1, true, "3-per-1h0m0s", 0, 0, time.Hour - 1, 0},
		},
	}, {
		// A slow and a fast GCRA: the denial names the slow one (the
		// longest wait) while the fast one has less left. slow: 12 s
		// apart, span 60 s; fast: 100 ms apart, span 200 ms.
		Name: "slow-and-fast",
		Layers: []Table{
			{Algorithm: core.GCRA, Limit: core.PerMinute(5).WithName("slow")},
			{Algorithm: core.GCRA, Limit: core.PerSecond(10).WithBurst(2).WithName("fast")},
		},
		Steps: []StackStep{
			{0, 2, true, "fast", 0, 0, 200 * ms, 0},
			// slow's next free instant is 48 s: 1 left, 11 s short of
			// a second; fast has 0 left.
			{1 * s, 2, true, "fast", 0, 0, 200 * ms, 0},
			{1 * s, 2, false, "slow", 0, 11 * s, 47 * s, 0},
		},
	}}
}

// RunStack plays tab on one key of a stack made by newStack and checks
// every decision exactly (waits may be later by at most late).
func RunStack(t *testing.T, tab StackTable, newStack StackFactory, late time.Duration) {
	t.Helper()
	clk := NewClock(T0)
	lim := newStack(t, tab, clk)
	for i, s := range tab.Steps {
		clk.Set(T0.Add(s.At))
		if s.Cost < 0 {
			if err := lim.Refund(context.Background(), "k", -s.Cost); err != nil {
				t.Fatalf("%s step %d: refund %d: %v", tab.Name, i, -s.Cost, err)
			}
			continue
		}
		d, err := lim.Allow(context.Background(), "k", s.Cost)
		if err != nil {
			t.Fatalf("%s step %d: %v", tab.Name, i, err)
		}
		ok := d.Allowed == s.Allowed && d.Limit.Name == s.Limit && d.Remaining == s.Remaining &&
			within(d.RetryAfter, s.Retry, late) && within(d.ResetAfter, s.Reset, late) && within(d.Delay, s.Delay, late)
		if !ok {
			t.Errorf("%s step %d at %v cost %d:\n got allowed=%v limit=%s remaining=%d retry=%v reset=%v delay=%v\nwant allowed=%v limit=%s remaining=%d retry=%v reset=%v delay=%v",
				tab.Name, i, s.At, s.Cost, d.Allowed, d.Limit.Name, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay,
				s.Allowed, s.Limit, s.Remaining, s.Retry, s.Reset, s.Delay)
		}
	}
}
