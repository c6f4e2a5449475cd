package redisstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// TestQuotaShares: instances of one key at its limit share it as their
// demands say (max-min fair), on the fake clock, each instance's timers
// firing when due. GCRA and token bucket, 200 a second, burst 4, leases
// of 100 ms. Equal demand: 4 instances calling every millisecond get
// their even share of each second (50), and of each 100 ms. Unequal: one
// calls every 25 ms (40 a second, under its even share of 100), the other
// every millisecond: the first gets all it asks for, the other the rest.
// Before each instance asked for its next lease in the background once
// it spent one granted at the limit (askNext), the first got every other
// call's unit: 20.
func TestQuotaShares(t *testing.T) {
	c := single(t)
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket} {
		l := core.Limit{Events: 200, Period: time.Second, Burst: 4, Algorithm: alg}
		t.Run(alg.String()+"/equal", func(t *testing.T) {
			r := newQuotaRig(t, c, l, 4, 0, 1)
			got := r.shares(t, "k", []int{1, 1, 1, 1})
			for i, per := range got.per100 {
				if per[0] < 3 || per[len(per)-1] > 7 {
					t.Errorf("instance %d admitted %v per 100 ms, want 3 to 7 in each (5 is even)", i, per)
				}
			}
			for i, n := range got.total {
				if n < 45 || n > 55 {
					t.Errorf("instance %d admitted %d in the second after the first, want 50 ± 5: %v", i, n, got.total)
				}
			}
		})
		t.Run(alg.String()+"/unequal", func(t *testing.T) {
			r := newQuotaRig(t, c, l, 2, 0, 1)
			got := r.shares(t, "k", []int{25, 1})
			if got.total[0] < 38 || got.total[1] < 150 || got.total[0]+got.total[1] > 201 {
				t.Errorf("in the second after the first, the instance asking 40 got %d, the one asking 1,000 %d; want at least 38 and 150, and at most 201 together", got.total[0], got.total[1])
			}
		})
	}
}

// shareRun is what each instance admitted in the second after the first:
// in all, and per 100 ms (sorted, least first).
type shareRun struct {
	total  []int
	per100 [][]int
}

// shares runs 2 s on the rig's clock, a millisecond at a time: instance i
// calls key once every every[i] ms, the instances in turn (who calls
// first rotates), and the timers fire when due.
func (r *quotaRig) shares(t *testing.T, key string, every []int) shareRun {
	t.Helper()
	n := len(every)
	run := shareRun{total: make([]int, n), per100: make([][]int, n)}
	for i := range run.per100 {
		run.per100[i] = make([]int, 10)
	}
	for ms := range 2000 {
		r.clk.Advance(time.Millisecond)
		r.fireDue()
		for j := range n {
			i := (j + ms) % n
			if ms%every[i] != 0 || !r.allow(i, key).Allowed || ms < 1000 {
				continue
			}
			run.total[i]++
			run.per100[i][(ms-1000)/100]++
		}
	}
	for i := range run.per100 {
		slices.Sort(run.per100[i])
	}
	t.Logf("per instance, in the second after the first: %v; per 100 ms, sorted: %v", run.total, run.per100)
	return run
}
