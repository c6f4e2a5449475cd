package overloadsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floodgate/floodgate/overload"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestGradient2Rule steps Gradient2's update by hand: L' = 0.8 L +
// 0.2 (g L + 4), g = clamp(1.5 long/short, 0.5, 1), long a plain mean of
// the first samples.
func TestGradient2Rule(t *testing.T) {
	g := &gradient2{limit: 20, longN: 600, warmup: 10}
	ms := float64(time.Millisecond)
	near(t, "after 10 ms", g.update(10*ms, 20, false), 20.8)                               // g = 1
	near(t, "after 30 ms", g.update(30*ms, 20, false), 21.6)                               // long 20, g = 1
	near(t, "after 60 ms", g.update(60*ms, 20, false), 0.8*21.6+0.2*(21.6*1.5*100/3/60+4)) // long 33.3
	l := g.limit
	near(t, "app-limited", g.update(10*ms, int(l/2)-1, false), l)
	// A long RTT over twice the short one decays by 5 % (still a plain
	// mean in the warm-up: of 10, 30, 60, 10 and 1 ms).
	g.update(1*ms, 1, false)
	near(t, "decayed long RTT", g.long, 111*ms/5*0.95)
}

// TestVegasRule steps Vegas by hand: q = ceil(L (1 - noLoad/rtt)), λ = 1
// below 100: +6 at q ≤ 1, +1 below 3, -1 above 6 or on a drop.
func TestVegasRule(t *testing.T) {
	v := &vegas{limit: 20, jitter: 1, rng: func() float64 { return 0 }}
	near(t, "first sample sets the no-load RTT", v.update(10, 20, false), 20)
	near(t, "no queue", v.update(10, 20, false), 26)
	near(t, "q = 13", v.update(20, 20, false), 25)
	near(t, "q = 5 holds", v.update(12.5, 20, false), 25)
	near(t, "q = 3 holds", v.update(11.2, 20, false), 25)
	near(t, "q = 2 grows", v.update(10.5, 20, false), 26)
	near(t, "drop", v.update(10, 20, true), 25)
	near(t, "app-limited", v.update(50, 12, false), 25)
	// The probe: after jitter × 30 × L samples the no-load RTT is the
	// sample's, whatever it is.
	v.probes = 30*25 - 1
	near(t, "probe", v.update(50, 20, false), 25)
	near(t, "no-load RTT after the probe", v.noLoad, 50)
}

// TestAIMDRule: +1 with at least L/2 in flight, int(0.9 L) on a drop or
// an RTT over 5 s, within [20, 200].
func TestAIMDRule(t *testing.T) {
	a := &aimd{limit: 30}
	near(t, "half in flight", a.update(1e6, 15, false), 31)
	near(t, "under half", a.update(1e6, 15, false), 31)
	near(t, "drop", a.update(1e6, 31, true), 27)
	near(t, "timeout", a.update(6e9, 31, false), 24)
	near(t, "floor", a.update(6e9, 31, false), 21)
	near(t, "floor", a.update(6e9, 31, false), 20)
	a.limit = 200
	near(t, "ceiling", a.update(1e6, 200, false), 200)
}

// TestEnvoyRule: the controller starts pinned at 3 until 50 samples give
// the minRTT (their p50), then every 100 ms sets L = gL + sqrt(gL), g =
// clamp(1.25 minRTT / p50, 0.5, 2), truncated, at least 3.
func TestEnvoyRule(t *testing.T) {
	c, _ := NewEnvoy(&Env{Rand: rand.New(rand.NewPCG(1, 2))})
	e := c.(*envoy)
	var r Request
	for i := range 3 {
		if !e.Admit(0, &r) {
			t.Fatalf("admission %d refused under the limit of 3", i)
		}
	}
	if e.Admit(0, &r) {
		t.Fatal("a 4th admitted at the limit of 3")
	}
	now := int64(0)
	for i := range 50 {
		now += int64(time.Millisecond)
		lat := time.Duration(8+i%5) * time.Millisecond // p50: 10 ms
		e.Done(now, &r, lat, false)
		e.Admit(now, &r)
	}
	if e.probing() || e.minRTT != 10000 || e.limit != 3 {
		t.Fatalf("after 50 samples: probing %v, minRTT %v µs, limit %v; want false, 10000, 3", e.probing(), e.minRTT, e.limit)
	}
	// A window whose p50 is the minRTT: g = 1.25, 3.75 + 1.94 = 5.
	e.Done(now, &r, 10*time.Millisecond, false)
	if l := e.Limit(now + int64(100*time.Millisecond)); l != 5 {
		t.Errorf("limit after a window at the minRTT = %v, want 5", l)
	}
	near(t, "from 100, g = 1.25", (&envoy{limit: 100, minRTT: 10000, sampleRTT: 10000, minC: 3, maxC: 1000, buffer: 0.25}).newLimit(), 136)
	near(t, "from 100, g = 0.5", (&envoy{limit: 100, minRTT: 10000, sampleRTT: 40000, minC: 3, maxC: 1000, buffer: 0.25}).newLimit(), 57)
	// A probe pins the limit to 3, drops the samples of requests sent
	// before it, and gives the limit back after 50 of its own.
	e.limit = 40
	at := now + int64(200*time.Millisecond)
	e.nextMinRTT = at
	if e.Limit(at) != 3 || !e.probing() {
		t.Fatalf("probe: limit %v, probing %v; want 3, true", e.limit, e.probing())
	}
	for range 60 {
		e.Done(at, &Request{Arrival: at - 1}, time.Millisecond, false)
	}
	for i := range 50 {
		e.Done(at+int64(i), &Request{Arrival: at}, 20*time.Millisecond, false)
	}
	if e.probing() || e.limit != 40 || e.minRTT != 20000 {
		t.Errorf("after the probe: probing %v, limit %v, minRTT %v µs; want false, 40, 20000", e.probing(), e.limit, e.minRTT)
	}
	// Five windows in a row at the minimum start a probe.
	e.limit, e.nextReset = 3, at+int64(100*time.Millisecond)
	for i := range 6 {
		at += int64(100 * time.Millisecond)
		e.Done(at-1, &Request{Arrival: at - 2}, time.Second, false)
		if e.Limit(at); e.probing() {
			if i != 4 {
				t.Errorf("probe after %d windows at the minimum, want 5", i+1)
			}
			return
		}
	}
	t.Error("no probe after 6 windows at the minimum")
}

// TestBBRRule: maxInFlight = maxPass × minRT (ms) × 10 / 1000 over the
// window but its current bucket, enforced while the CPU is at 800‰ or
// within a second of the start of the drop.
func TestBBRRule(t *testing.T) {
	s := &sim{}
	c, _ := NewBBR(&Env{s: s})
	b := c.(*bbr)
	bucket := int64(100 * time.Millisecond)
	for range 100 {
		b.Done(3*bucket, &Request{}, 7500*time.Microsecond, false) // RT 8 ms
	}
	for range 40 {
		b.Done(5*bucket, &Request{}, 10*time.Millisecond, false)
	}
	for range 500 {
		b.Done(10*bucket, &Request{}, time.Millisecond, false) // the current bucket
	}
	now := 10*bucket + 1
	if got := b.maxInFlight(now); got != 8 {
		t.Fatalf("maxInFlight = %d, want 100 × 8 × 10 / 1000 = 8", got)
	}
	b.inflight = 9 + 640 // the 640 Done calls above took 640 off
	if b.shouldDrop(now) {
		t.Error("dropped at CPU 0")
	}
	b.cpu = 800
	if !b.shouldDrop(now) {
		t.Error("kept 9 in flight over 8 at CPU 800")
	}
	b.cpu = 500
	if !b.shouldDrop(now + int64(time.Second)) {
		t.Error("stopped dropping within the second of cool-off")
	}
	if b.shouldDrop(now + int64(time.Second) + 1) {
		t.Error("still dropping after the cool-off at CPU 500")
	}
	// The CPU: busy over available in each 500 ms, in ‰, smoothed 0.95.
	s.busyNs, s.availNs = 400, 1000
	b.cpu = 0
	b.Tick(0)
	s.busyNs, s.availNs = 1400, 2000
	b.Tick(0)
	if b.cpu != 69 { // 400 × 0.05 = 20; 20 × 0.95 + 1000 × 0.05 = 69
		t.Errorf("cpu = %d, want 69", b.cpu)
	}
}

// TestFailsafeRule steps failsafe-go's update: q = ceil(L (1 -
// baseline/recent)); -1 above 6, +1 below 3; at most 5 × the window's
// most in flight.
func TestFailsafeRule(t *testing.T) {
	for _, step := range []struct {
		second   float64 // the second window's RTT, after one of 10
		inflight int
		want     float64
	}{
		{10, 10, 22}, // q = 0 twice: +1, +1
		{20, 10, 21}, // baseline 15: q = ceil(21 × 0.25) = 6, hold
		{28, 10, 20}, // baseline 19: q = ceil(21 × 0.32) = 7, -1
		{20, 4, 20},  // at most 5 × 4 = 20 in flight
		{20, 3, 20},  // over 15 already: -1 from 21
	} {
		c, _ := NewFailsafe(nil)
		f := c.(*failsafe)
		f.update(10, 10)
		near(t, "after q = 0", f.limit, 21)
		f.update(step.second, step.inflight)
		near(t, fmt.Sprintf("after %v ms with %d in flight", step.second, step.inflight), f.limit, step.want)
	}
	c, _ := NewFailsafe(nil)
	// Updates come from windows of at least 50 samples and 1 s.
	g := c.(*failsafe)
	g.limit, g.nextUpdate = 20, 0
	for i := range 49 {
		g.Done(int64(2*time.Second), &Request{Tag: 1}, time.Millisecond, false)
		if i == 48 && g.limit != 20 {
			t.Errorf("limit moved after 49 samples: %v", g.limit)
		}
	}
}

// TestPartitionsRule: under the limit anyone is admitted; at it, each
// priority only while under its share of it (Critical 90 %, Normal 10 %,
// any other 1).
func TestPartitionsRule(t *testing.T) {
	c, _ := NewPartitions(nil)
	p := c.(*partitioned)
	p.limit = 20
	admit := func(prio overload.Priority, n int) (k int) {
		for range n {
			if p.Admit(0, &Request{Priority: prio}) {
				k++
			}
		}
		return k
	}
	if k := admit(overload.Normal, 25); k != 20 {
		t.Fatalf("Normal admitted %d of 25 from empty, want 20 (to the limit, then its 10 %%: 2, already held)", k)
	}
	if k := admit(overload.Critical, 25); k != 18 {
		t.Errorf("Critical admitted %d over the limit, want ceil(0.9 × 20) = 18", k)
	}
	if k := admit(overload.Sheddable, 3); k != 1 {
		t.Errorf("Sheddable admitted %d over the limit, want 1 (the unknown partition)", k)
	}
	p.Done(0, &Request{Priority: overload.Normal, Tag: 1}, time.Millisecond, false)
	if p.busy[overload.Normal] != 19 || p.inflight != 38 {
		t.Errorf("after one Normal ends: Normal %d in flight of %d, want 19 of 38", p.busy[overload.Normal], p.inflight)
	}
}
