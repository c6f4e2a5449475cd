package overloadsim

import (
	"math"
	"testing"
	"time"

	"github.com/floodgate/floodgate/overload"
)

// crafted returns a Result of n bins of 100 ms with capacity 100 each,
// for testing the figures on counts set by hand.
func crafted(n int, classes []Class, tenants int) *Result {
	c := Config{Duration: time.Duration(n) * 100 * time.Millisecond, Load: []Step{{0, 1}}, Classes: classes, Tenants: make([]float64, tenants)}
	for i := range c.Tenants {
		c.Tenants[i] = 1
	}
	r := newResult(c.withDefaults())
	for i := range r.Bins {
		r.Bins[i].Capacity = 100
	}
	return r
}

// TestConverged: bins meet the goals from bin 7 on, but for a dip in bin
// 4; judged on 500 ms windows after an event at 200 ms, the run has
// converged from bin 5, 300 ms after it.
func TestConverged(t *testing.T) {
	r := crafted(20, nil, 1)
	ok := r.Config.UnloadedP99() // within the goal
	for i := range r.Bins {
		b := &r.Bins[i]
		b.Good, b.lat = 100, []int64{int64(ok)}
		if i < 2 || i == 4 {
			b.Good = 0
		}
	}
	if after, conv := r.Converged(200*time.Millisecond, 2*time.Second); !conv || after != 300*time.Millisecond {
		t.Errorf("Converged = %v, %v; want 300ms, true", after, conv)
	}
	// A slow request in the last window: never converged.
	r.Bins[19].lat = append(r.Bins[19].lat, int64(2*ok))
	if after, conv := r.Converged(200*time.Millisecond, 2*time.Second); conv {
		t.Errorf("Converged = %v, true; want false with a p99 of 2x at the end", after)
	}
}

// TestInversions: a Normal admitted in a bin where a Critical was shed is
// an inversion; one admitted where only Normals were shed is not.
func TestInversions(t *testing.T) {
	r := crafted(2, []Class{{overload.Critical, 1}, {overload.Normal, 1}}, 1)
	r.Bins[0].Classes[0] = ClassBin{Admitted: 10, Shed: 1}
	r.Bins[0].Classes[1] = ClassBin{Admitted: 5, Shed: 20}
	r.Bins[1].Classes[0] = ClassBin{Admitted: 10}
	r.Bins[1].Classes[1] = ClassBin{Admitted: 5, Shed: 20}
	if got, want := r.Inversions(0, 200*time.Millisecond), 5.0/30; got != want {
		t.Errorf("Inversions = %v, want %v", got, want)
	}
}

// TestJain: with demands 60, 20 and 20 and 60 served, the max-min fair
// shares are 20 each; serving 40, 10, 10 gives x = 2, 0.5, 0.5 and an
// index of 9/(3 × 4.5) = 2/3; serving 20 each gives 1.
func TestJain(t *testing.T) {
	r := crafted(1, nil, 3)
	cb := &r.Bins[0].Classes[0]
	cb.TenantArrived = []int{60, 20, 20}
	cb.TenantGood = []int{40, 10, 10}
	if got := r.Jain(0, 100*time.Millisecond); math.Abs(got-2.0/3) > 1e-12 {
		t.Errorf("Jain = %v, want 2/3", got)
	}
	cb.TenantGood = []int{20, 20, 20}
	if got := r.Jain(0, 100*time.Millisecond); got != 1 {
		t.Errorf("Jain = %v, want 1", got)
	}
	cb.TenantGood = []int{0, 0, 0}
	if got := r.Jain(0, 100*time.Millisecond); !math.IsNaN(got) {
		t.Errorf("Jain with no goodput = %v, want NaN", got)
	}
}

// TestUnloadedP99: the lognormal's p99 for a mean of 5 ms and sigma 0.5
// is 5 ms × exp(2.326 × 0.5 − 0.125) = 14.12 ms; with no spread, the mean.
func TestUnloadedP99(t *testing.T) {
	if got := (Config{}).UnloadedP99(); got.Round(10*time.Microsecond) != 14120*time.Microsecond {
		t.Errorf("UnloadedP99 = %v, want 14.12ms", got)
	}
	if got := (Config{Sigma: -1}).UnloadedP99(); got != 5*time.Millisecond {
		t.Errorf("UnloadedP99 with no spread = %v, want 5ms", got)
	}
}
