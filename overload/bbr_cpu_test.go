package overload

import (
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// firstShed steps the container from idle to saturated at offset past a
// sample, with the real sampler and smoothing (every interval, over
// smoothing) on fake time feeding a BBR limiter that has more in flight
// than its bound, and returns how long after the step the first request
// was shed (tried every 10 ms).
func firstShed(t *testing.T, smoothing, offset time.Duration) time.Duration {
	tr := trees[0] // half a CPU
	f := loadTree(t, tr.name)
	f.set(tr.usage, tr.counter(0))
	s := newSampler(t, CPUConfig{FS: f, Smoothing: smoothing}, cpuDeps{numCPU: 8})
	b, err := NewBBR(BBRConfig{CPU: s.c.Load, Clock: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	complete(t, b, s.clock, 100, core.EndDone, 5*time.Millisecond) // bound 5
	for range 10 {
		hold(t, b, bg, 1)
	}
	interval := 250 * time.Millisecond
	step := t0.Add(2*time.Second + offset)
	next := t0.Add(interval)
	for at := t0.Add(time.Second); at.Before(t0.Add(30 * time.Second)); at = at.Add(10 * time.Millisecond) {
		for !at.Before(next) {
			busy := max(0, next.Sub(step))
			f.set(tr.usage, tr.counter(int64(float64(busy)*tr.limit)))
			s.tick(next)
			next = next.Add(interval)
		}
		s.clock.Set(at)
		d, err := b.Allow(bg, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Shed {
			if at.Before(step) {
				t.Fatalf("shed %v before the step", step.Sub(at))
			}
			return at.Sub(step)
		}
		d.Lease.End(bg, core.EndIgnored)
	}
	t.Fatal("never shed")
	return 0
}

// Shedding starts within 1 s of a step from idle to saturated, wherever
// the step falls between samples (the goal); a 2 s smoothing would not.
func TestBBRShedsWithinASecondOfACPUStep(t *testing.T) {
	worst := time.Duration(0)
	for offset := time.Duration(0); offset < 250*time.Millisecond; offset += 5 * time.Millisecond {
		worst = max(worst, firstShed(t, 0, offset))
	}
	if worst > time.Second {
		t.Fatalf("first shed %v after the step, want <= 1s", worst)
	}
	t.Logf("first shed at most %v after the step", worst)
	if d := firstShed(t, 2*time.Second, 0); d <= time.Second {
		t.Fatalf("with a 2s smoothing the first shed came %v after the step: the test cannot tell", d)
	}
}
