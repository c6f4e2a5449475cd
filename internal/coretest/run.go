package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// Run plays tab on one key of a limiter made by newLimiter, and checks every
// decision: Allowed, Remaining and Limit exactly, RetryAfter, ResetAfter
// and Delay exactly or later by at most late (a store whose clock is
// coarser may round waits up, never down).
func Run(t *testing.T, tab Table, newLimiter Factory, late time.Duration) {
	t.Helper()
	clk := NewClock(T0)
	lim := newLimiter(t, tab, clk)
	leases := tab.Limit.Algorithm == core.Concurrency
	var holding []heldLease // leases handed out and not released, oldest first
	for i, s := range tab.Steps {
		clk.Set(T0.Add(s.At))
		if s.Cost < 0 && leases {
			n := 0
			for n < -s.Cost && len(holding) > 0 {
				if err := holding[0].lease.Release(context.Background()); err != nil {
					t.Fatalf("%s step %d: release: %v", tab.Name, i, err)
				}
				n += holding[0].cost
				holding = holding[1:]
			}
			if n != -s.Cost {
				t.Fatalf("%s step %d: the oldest leases hold %d units, not %d: fix the table", tab.Name, i, n, -s.Cost)
			}
			continue
		}
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
		if !d.Lease.IsZero() != (leases && d.Allowed) {
			t.Errorf("%s step %d: allowed=%v with lease %v; a lease comes with every admission under Concurrency, and with nothing else", tab.Name, i, d.Allowed, d.Lease)
		}
		if !d.Lease.IsZero() {
			holding = append(holding, heldLease{d.Lease, s.Cost})
		}
		ok := d.Allowed == s.Allowed && d.Remaining == s.Remaining &&
			within(d.RetryAfter, s.Retry, late) && within(d.ResetAfter, s.Reset, late) && within(d.Delay, s.Delay, late)
		if !ok {
			t.Errorf("%s step %d at %v cost %d:\n got allowed=%v remaining=%d retry=%v reset=%v delay=%v\nwant allowed=%v remaining=%d retry=%v reset=%v delay=%v",
				tab.Name, i, s.At, s.Cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay, s.Allowed, s.Remaining, s.Retry, s.Reset, s.Delay)
		}
		if d.Limit != tab.Limit {
			t.Errorf("%s step %d: decision limit %v, want %v", tab.Name, i, d.Limit, tab.Limit)
		}
	}
}

// heldLease is a lease a table's admission holds, and its cost.
type heldLease struct {
	lease core.Lease
	cost  int
}

func within(got, want, late time.Duration) bool { return got >= want && got-want <= late }
