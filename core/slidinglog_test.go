package core_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// TestWindowOptionsValidated: the sub-window and log options fail at New,
// saying what to change, wherever they do not fit.
func TestWindowOptionsValidated(t *testing.T) {
	t.Parallel()
	log := func(n int) core.Limit { return core.PerSecond(n).WithAlgorithm(core.SlidingLog) }
	sub := func(n, subs int) core.Limit { return core.PerSecond(n).WithSubWindows(subs) }
	cases := []struct {
		name string
		l    core.Limit
		want string // in the error; "" for none
	}{
		{"log", log(1024), ""},
		{"log-over-default-cap", log(1025),
			"core: SlidingLog: 1025 events per period need up to 1025 log entries per key (16 bytes each), more than MaxEntries allows (1024); raise the cap with WithMaxEntries(1025) or use SlidingWindow (with sub-windows for a closer count)"},
		{"log-raised-cap", log(1025).WithMaxEntries(1025), ""},
		{"log-low-cap", log(10).WithMaxEntries(9), "raise the cap with WithMaxEntries(10)"},
		{"cap-range", log(10).WithMaxEntries(-1), "core: limit MaxEntries -1: the cap must be from 1 to 1048576 entries per key (0 for the default, 1024)"},
		{"cap-other-algorithm", core.PerSecond(10).WithAlgorithm(core.GCRA).WithMaxEntries(10), "core: MaxEntries applies to SlidingLog and to SlidingWindow with SubWindows only, not gcra"},
		{"cap-counter", core.PerSecond(10).WithAlgorithm(core.SlidingWindow).WithMaxEntries(10), "not sliding-window"},
		{"sub", sub(10, 10), ""},
		{"sub-one", sub(10, 1), "core: limit SubWindows 1: the number of sub-windows must be from 2 to 1048576"},
		{"sub-other-algorithm", sub(10, 4).WithAlgorithm(core.FixedWindow), "core: SubWindows applies to SlidingWindow only, not fixed-window"},
		{"sub-log", sub(10, 4).WithAlgorithm(core.SlidingLog), "not sliding-log"},
		{"sub-indivisible", sub(10, 7),
			"core: SubWindows 7: the period 1s is not a whole number of nanoseconds times 7; pick a number of sub-windows that divides it"},
		// Many events in few sub-windows need few entries.
		{"sub-many-events", sub(1_000_000, 1000), ""},
		{"sub-over-cap", sub(1_000_000, 2000),
			"core: SubWindows 2000: 1000000 events in 2000 sub-windows need up to 2000 log entries per key (16 bytes each), more than MaxEntries allows (1024); raise the cap with WithMaxEntries(2000) or use fewer sub-windows"},
		{"sub-few-events", sub(3, 2000).WithMaxEntries(3), ""},
	}
	for _, c := range cases {
		_, err := core.New(c.l)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestSlidingLogNoAllocs: once a key's ring has grown to what its traffic
// needs, decisions on it allocate nothing, admitted or refused, and so do
// refunds.
func TestSlidingLogNoAllocs(t *testing.T) {
	for _, l := range []core.Limit{
		core.PerSecond(100).WithAlgorithm(core.SlidingLog),
		core.PerSecond(100).WithSubWindows(10),
	} {
		lim, clk := newLimiter(t, l)
		warm := func() {
			for i := 0; i < 1000; i++ {
				clk.Advance(7 * time.Millisecond)
				allow(t, lim, "k", 1+i%3)
			}
		}
		warm()
		if n := testing.AllocsPerRun(10, warm); n != 0 {
			t.Errorf("%v: %v allocations per 1000 decisions", l, n)
		}
		refund := func() { _ = lim.Refund(ctx, "k", 1) }
		if n := testing.AllocsPerRun(100, refund); n != 0 {
			t.Errorf("%v: %v allocations per refund", l, n)
		}
	}
}

// TestSlidingLogIdleKeysDropped: keys whose log has emptied (by time or by
// refunds) leave the table when new keys arrive, so a full table of them
// takes new keys without overflow, and the number of keys held never
// exceeds the capacity.
func TestSlidingLogIdleKeysDropped(t *testing.T) {
	t.Parallel()
	for _, l := range []core.Limit{
		core.PerMinute(6).WithAlgorithm(core.SlidingLog),
		core.PerMinute(6).WithSubWindows(6),
	} {
		lim, clk := newLimiter(t, l, core.WithCapacity(100))
		for round := 0; round < 5; round++ {
			for i := 0; i < 100; i++ {
				key := strconv.Itoa(round) + "/" + strconv.Itoa(i)
				if d := allow(t, lim, key, 1+i%6); !d.Allowed || d.Overflow {
					t.Fatalf("round %d key %d: %+v", round, i, d)
				}
				if i%2 == 0 {
					if err := lim.Refund(ctx, key, 6); err != nil {
						t.Fatal(err)
					}
				}
				if lim.Len() > 100 {
					t.Fatalf("holds %d keys, capacity 100", lim.Len())
				}
			}
			// The refunded half is idle already; the rest after a minute.
			if d := allow(t, lim, "extra"+strconv.Itoa(round), 1); !d.Allowed || d.Overflow {
				t.Fatalf("round %d: a new key with 50 idle keys held: %+v", round, d)
			}
			clk.Advance(time.Minute)
		}
	}
}

// TestSlidingLogFullPolicy: with every key drained, FullOverflow decides
// new keys against one shared log, and with every key live FullEvictLRU
// drops the least recently charged key.
func TestSlidingLogFullPolicy(t *testing.T) {
	t.Parallel()
	l := core.PerMinute(2)
	lim, _ := newLimiter(t, l.WithAlgorithm(core.SlidingLog), core.WithCapacity(2), core.WithShards(1))
	allow(t, lim, "a", 2)
	allow(t, lim, "b", 2)
	for i, want := range []bool{true, true, false} {
		if d := allow(t, lim, "new"+strconv.Itoa(i), 1); d.Allowed != want || !d.Overflow {
			t.Fatalf("overflow request %d: %+v, want allowed=%v in overflow", i, d, want)
		}
	}
	lim, _ = newLimiter(t, l.WithAlgorithm(core.SlidingLog), core.WithCapacity(2), core.WithShards(1), core.WithFullPolicy(core.FullEvictLRU))
	allow(t, lim, "a", 1)
	allow(t, lim, "b", 1)
	allow(t, lim, "a", 1) // b is now the least recently charged
	if d := allow(t, lim, "c", 1); !d.Allowed || d.Overflow || lim.Len() != 2 {
		t.Fatalf("c: %+v, %d keys", d, lim.Len())
	}
	if d := allow(t, lim, "a", 1); d.Allowed {
		t.Fatalf("a was evicted: %+v", d)
	}
	if d := allow(t, lim, "b", 2); !d.Allowed {
		t.Fatalf("b kept its state: %+v", d)
	}
}

// TestSlidingLogClockBack: a clock that steps back behind a key's newest
// entry decides at that entry's instant: no quota comes back, and waits are
// counted from the reading.
func TestSlidingLogClockBack(t *testing.T) {
	t.Parallel()
	lim, clk := newLimiter(t, (core.Limit{Events: 2, Period: time.Second}).WithAlgorithm(core.SlidingLog))
	clk.Advance(500 * ms)
	allow(t, lim, "k", 2)
	clk.Advance(-400 * ms)
	d := allow(t, lim, "k", 1)
	if d.Allowed || d.RetryAfter != 1400*ms || d.ResetAfter != 1400*ms {
		t.Fatalf("after stepping back: %+v, want refused, retry and reset 1.4s", d)
	}
}
