package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// StackStep is one request of a stack's decision table and the decision it
// must get, with the name of the limit it names. A negative Cost is a
// refund of -Cost units to every layer (Limiter.Refund), and a zero Cost
// releases the oldest Lease the table's admissions hold (a stack with a
// concurrency layer); neither is checked beyond its error.
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
			{Limit: core.PerSecond(5).WithName("second").WithAlgorithm(core.GCRA)},
			{Limit: core.Limit{Events: 6, Period: 10 * s, Name: "ten", Algorithm: core.FixedWindow}},
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
			{Limit: core.PerSecond(10).WithAlgorithm(core.TokenBucket)},
			{Limit: core.PerMinute(100).WithAlgorithm(core.TokenBucket)},
			{Limit: core.PerHour(3).WithAlgorithm(core.TokenBucket)},
		},
		Steps: []StackStep{
			{0, 2, true, "3-per-h", 1, 0, 40*time.Minute - 1, 0},
			{0, 2, false, "3-per-h", 1, 20*time.Minute - 1, 40*time.Minute - 1, 0},
			{0, 1, true, "3-per-h", 0, 0, time.Hour - 1, 0},
		},
	}, {
		// A slow and a fast GCRA: the denial names the slow one (the
		// longest wait) while the fast one has less left. slow: 12 s
		// apart, span 60 s; fast: 100 ms apart, span 200 ms.
		Name: "slow-and-fast",
		Layers: []Table{
			{Limit: core.PerMinute(5).WithName("slow").WithAlgorithm(core.GCRA)},
			{Limit: core.PerSecond(10).WithBurst(2).WithName("fast").WithAlgorithm(core.GCRA)},
		},
		Steps: []StackStep{
			{0, 2, true, "fast", 0, 0, 200 * ms, 0},
			// slow's next free instant is 48 s: 1 left, 11 s short of
			// a second; fast has 0 left.
			{1 * s, 2, true, "fast", 0, 0, 200 * ms, 0},
			{1 * s, 2, false, "slow", 0, 11 * s, 47 * s, 0},
		},
	}, {
		// An exact log of 3 per second and a ring of 4 sub-windows of
		// 500 ms counting 5 per 2 s, aligned to T0.
		Name: "log-and-sub-windows",
		Layers: []Table{
			{Limit: core.Limit{Events: 3, Period: s, Name: "log", Algorithm: core.SlidingLog}},
			{Limit: core.Limit{Events: 5, Period: 2 * s, Name: "ring", Algorithm: core.SlidingWindow, SubWindows: 4}},
		},
		Steps: []StackStep{
			// The log has 1 left, the ring 3.
			{0, 2, true, "log", 1, 0, s, 0},
			// The log refuses until its entry at 0 leaves at 1 s; the
			// ring would admit and is not charged.
			{100 * ms, 2, false, "log", 1, 900 * ms, 900 * ms, 0},
			{100 * ms, 1, true, "log", 0, 0, s, 0},
			// At 1 s the entry at 0 has left the log (1 of 3 counts);
			// the ring's sub-window at 0 still counts: 3 + 2 of 5. Both
			// have 0 left: the first is named.
			{s, 2, true, "log", 0, 0, s, 0},
			// The log would admit (its entry at 100 ms has left), the
			// ring refuses until its sub-window at 0 leaves, at 2 s.
			{1200 * ms, 1, false, "ring", 0, 800 * ms, 1800 * ms, 0},
			// At 2 s the log holds nothing that counts, the ring 2 (the
			// sub-window at 1 s): had the denial above charged either,
			// this would be refused.
			{2 * s, 3, true, "log", 0, 0, s, 0},
			// A refund of 2 takes from the newest entries of both.
			{2 * s, -2, false, "", 0, 0, 0, 0},
			{2100 * ms, 2, true, "log", 0, 0, s, 0},
			// Both refuse for 400 ms (the log's entry at 2 s, the ring's
			// sub-window at 1 s): the first is named.
			{2600 * ms, 1, false, "log", 0, 400 * ms, 500 * ms, 0},
			// The log has 1 left, the ring 0 (its sub-windows at 2 s
			// and 3 s hold 3 + 1 + 1): the ring is named.
			{3 * s, 1, true, "log", 0, 0, s, 0},
			{3200 * ms, 1, true, "ring", 0, 0, 1800 * ms, 0},
		},
	}, {
		// At most 2 in flight (250 ms is the hint a refusal gives) and
		// a token bucket of 4 per second, 250 ms per token.
		Name: "concurrency-and-token-bucket",
		Layers: []Table{
			{Limit: core.Limit{Events: 2, Period: 250 * ms, Name: "inflight", Algorithm: core.Concurrency}},
			{Limit: core.PerSecond(4).WithName("rate").WithAlgorithm(core.TokenBucket)},
		},
		Steps: []StackStep{
			{0, 1, true, "inflight", 1, 0, 250 * ms, 0},
			{0, 1, true, "inflight", 0, 0, 250 * ms, 0},
			// Two in flight: refused, the bucket (2 left) not charged.
			{0, 1, false, "inflight", 0, 250 * ms, 250 * ms, 0},
			{100 * ms, 0, false, "", 0, 0, 0, 0}, // release the first
			// The bucket has 2.4 tokens, 1.4 after this.
			{100 * ms, 1, true, "inflight", 0, 0, 250 * ms, 0},
			{100 * ms, 0, false, "", 0, 0, 0, 0},
			{100 * ms, 0, false, "", 0, 0, 0, 0},
			// Nothing in flight; the bucket refuses 2 for 150 ms, and
			// the concurrency layer is not charged. (Its waits are
			// x/time/rate's: float tokens, durations truncated to the
			// nanosecond, so 2.6 tokens at 4/s are 1 ns short of 650 ms.)
			{100 * ms, 2, false, "rate", 1, 150 * ms, 650*ms - 1, 0},
			{250 * ms, 2, true, "inflight", 0, 0, 250 * ms, 0},
			// A refund gives 1 back to both layers (the lease above
			// still holds its 2 units, of which 1 is counted now).
			{250 * ms, -1, false, "", 0, 0, 0, 0},
			{250 * ms, 1, true, "inflight", 0, 0, 250 * ms, 0},
			// Both refuse: the concurrency layer's hint (250 ms) is the
			// longer wait, the bucket's 200 ms.
			{300 * ms, 1, false, "inflight", 0, 250 * ms, 250 * ms, 0},
			// Releasing the 2-unit lease empties the layer; the bucket
			// still refuses.
			{300 * ms, 0, false, "", 0, 0, 0, 0},
			{300 * ms, 1, false, "rate", 0, 200*ms - 1, 950*ms - 1, 0},
		},
	}}
}

// RunStack plays tab on one key of a stack made by newStack and checks
// every decision exactly (waits may be later by at most late).
func RunStack(t *testing.T, tab StackTable, newStack StackFactory, late time.Duration) {
	t.Helper()
	clk := NewClock(T0)
	lim := newStack(t, tab, clk)
	leases := false
	for _, l := range tab.Layers {
		leases = leases || l.Limit.Algorithm == core.Concurrency
	}
	var holding []core.Lease
	defer func() {
		for _, l := range holding {
			_ = l.Release(context.Background())
		}
	}()
	for i, s := range tab.Steps {
		clk.Set(T0.Add(s.At))
		switch {
		case s.Cost < 0:
			if err := lim.Refund(context.Background(), "k", -s.Cost); err != nil {
				t.Fatalf("%s step %d: refund %d: %v", tab.Name, i, -s.Cost, err)
			}
			continue
		case s.Cost == 0:
			if len(holding) == 0 {
				t.Fatalf("%s step %d: no lease to release", tab.Name, i)
			}
			if err := holding[0].Release(context.Background()); err != nil {
				t.Fatalf("%s step %d: release: %v", tab.Name, i, err)
			}
			holding = holding[1:]
			continue
		}
		d, err := lim.Allow(context.Background(), "k", s.Cost)
		if err != nil {
			t.Fatalf("%s step %d: %v", tab.Name, i, err)
		}
		if !d.Lease.IsZero() != (d.Allowed && leases) {
			t.Errorf("%s step %d: allowed=%v with lease %v; a lease comes with every admission of a stack with a concurrency layer, and with nothing else", tab.Name, i, d.Allowed, d.Lease)
		}
		if !d.Lease.IsZero() {
			holding = append(holding, d.Lease)
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
