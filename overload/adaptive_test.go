package overload

import (
	"math"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// fixture drives an Adaptive on a fake clock in batches: requests
// admitted at one instant and ended together a latency later, so that
// every window's mean is exact and its spread nil.
type fixture struct {
	t   *testing.T
	clk *coretest.Clock
	a   *Adaptive
}

func newFixture(t *testing.T, c AdaptiveConfig) *fixture {
	t.Helper()
	clk := coretest.NewClock(time.Unix(1000, 0))
	c.Clock = clk
	a, err := NewAdaptive(c)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, clk: clk, a: a}
}

// batch waits twice the last window's mean latency (so that the window
// has lasted long enough to close when the batch ends), admits n Normal
// requests, waits lat and ends them: the first `dropped` with
// core.EndDropped, the rest with how. With refuse, a request of the
// lowest priority is refused meanwhile, as under overload. With n =
// minSamples (and no more left in the window), the batch is one window.
func (f *fixture) batch(n int, lat time.Duration, how core.Ending, dropped int, refuse bool) {
	f.t.Helper()
	f.clk.Advance(2 * f.a.Stats().Latency)
	toks := make([]Token, n)
	for i := range toks {
		var ok bool
		if toks[i], ok = f.a.Acquire(Normal, 1); !ok {
			f.t.Fatalf("request %d of %d refused under limit %d", i, n, f.limit())
		}
	}
	if refuse {
		if _, ok := f.a.Acquire(-100, 1); ok {
			f.t.Fatalf("a request of priority -100 admitted with %d in flight under limit %d", n, f.limit())
		}
	}
	f.clk.Advance(lat)
	for i, tok := range toks {
		if i < dropped {
			tok.End(core.EndDropped)
		} else {
			tok.End(how)
		}
	}
}

// warm runs the two windows of the warm-up after which the baseline is
// lat: the first only lets the first requests end, the second is the
// first baseline. Each measures twice the limit, from slowSamples to
// minSamples.
func (f *fixture) warm(lat time.Duration) {
	for range warmWindows {
		f.batch(f.a.est.slowNeed(), lat, core.EndDone, 0, false)
	}
	if got := f.a.Stats().Baseline; got != lat {
		f.t.Fatalf("baseline after the warm-up = %v, want %v", got, lat)
	}
}

func (f *fixture) limit() int { return f.a.Stats().Limit }

// pastSlowStart ends the slow start, as the first window above the
// tolerance does, for the tests of the gradient that follows it
// (TestAdaptiveSlowStart tests the slow start).
func (f *fixture) pastSlowStart() { f.a.est.slow = false }

// TestAdaptiveRises: while the latency stays at the baseline and the
// limit binds, each window raises it by the tolerance, up to MaxLimit.
func TestAdaptiveRises(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{MaxLimit: 40, InitialLimit: 20})
	f.warm(time.Millisecond)
	want := 20.0
	for i := range 12 {
		if got := f.limit(); got != int(math.Round(want)) {
			t.Fatalf("window %d: limit %d, want %v", i, got, math.Round(want))
		}
		f.batch(f.limit(), time.Millisecond, core.EndDone, 0, false)
		want = min(want*defaultTolerance, 40)
	}
	if got := f.limit(); got != 40 {
		t.Fatalf("limit %d, want the ceiling 40", got)
	}
}

// TestAdaptiveAppLimited: a service that never fills half the limit
// says nothing of whether more would fit: the limit holds.
func TestAdaptiveAppLimited(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 40})
	f.warm(time.Millisecond)
	for range 10 {
		f.batch(minSamples, time.Millisecond, core.EndDone, 0, false)
	}
	if got := f.limit(); got != 40 {
		t.Fatalf("limit %d, want 40 (unchanged)", got)
	}
}

// TestAdaptiveFalls: under overload (every window refuses some), a
// latency above the target lowers the limit in proportion, at most
// halving it, never below MinLimit; and once it has been halved for two
// windows with the latency not falling, the latency is the service's
// own: the baseline is rebased to it, and the slow start finds the
// knee again.
func TestAdaptiveFalls(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{MinLimit: minSamples, InitialLimit: 30})
	f.warm(time.Millisecond)
	steps := []struct {
		lat   time.Duration
		limit int
		base  time.Duration
	}{
		{1500 * time.Microsecond, 30, time.Millisecond},  // once past the band: the slow start holds
		{1500 * time.Microsecond, 22, time.Millisecond},  // twice: it ends, 30 × 1.1/1.5 = 22
		{3 * time.Millisecond, 22, time.Millisecond},     // the cut that ended a cold start: held once
		{3 * time.Millisecond, 16, time.Millisecond},     // × 0.5 (at most halved) = 11: the floor
		{3 * time.Millisecond, 16, time.Millisecond},     // one window at the floor: it measures what came before
		{3 * time.Millisecond, 16, 3 * time.Millisecond}, // two: the latency did not fall, rebased
		{3 * time.Millisecond, 32, 3 * time.Millisecond}, // the latency is the baseline: the slow start again, 16 × 2
	}
	for i, s := range steps {
		f.batch(minSamples, s.lat, core.EndDone, 0, true)
		st := f.a.Stats()
		if st.Limit != s.limit || st.Baseline != s.base {
			t.Fatalf("window %d at %v: limit %d, baseline %v; want %d, %v", i, s.lat, st.Limit, st.Baseline, s.limit, s.base)
		}
	}
}

// TestAdaptiveDrop: a dropped request is a sign of overload whatever its
// latency: a window whose share s of requests was dropped lowers the
// limit by s/2, even with the latency at the baseline.
func TestAdaptiveDrop(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(time.Millisecond)
	f.batch(minSamples, time.Millisecond, core.EndDone, 4, false)
	if got := f.limit(); got != 18 { // 20 × (1 − 4/16/2) = 17.5
		t.Fatalf("limit %d after 4 of 16 dropped, want 18", got)
	}
}

// TestAdaptiveNoCreep: through a sustained overload whose latency sits
// at the target (the tolerance above the baseline), the baseline and the
// limit stay put: a baseline learnt from the overloaded windows would
// creep up, and the limit with it. The probes every probeAfter windows
// run at the limit / tol² and, finding the service at the baseline,
// change nothing.
func TestAdaptiveNoCreep(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	probes := 0
	for i := range 4 * probeAfter {
		lat := 1100 * time.Microsecond // a queue of a tenth
		if f.limit() < 20 {
			lat = time.Millisecond // the probe: no queue
			probes++
		}
		f.batch(minSamples, lat, core.EndDone, 0, true)
		st := f.a.Stats()
		if st.Baseline != time.Millisecond || (st.Limit != 20 && st.Limit != 17) {
			t.Fatalf("window %d: baseline %v, limit %d; want 1ms, 20 (17 in a probe)", i, st.Baseline, st.Limit)
		}
	}
	if probes != 3*3 { // three probes of three windows
		t.Fatalf("%d windows probed, want 9", probes)
	}
}

// TestAdaptiveProbe: a service that got faster through a sustained
// overload leaves the baseline stale high; a probe finds it out. After
// probeAfter windows that refused, three windows run at limit/tol² =
// 20/1.21 = 16.5; the first is ignored, the next two measure 0.9 and
// 1.1 ms, 1 ms on average, below the baseline / tol: the baseline takes
// it, and the next probe comes probeAgain windows later. (probeAgain is
// 2: the test spells the windows out.)
func TestAdaptiveProbe(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(2 * time.Millisecond)
	f.pastSlowStart()
	for i := range probeAfter {
		f.batch(minSamples, 2200*time.Microsecond, core.EndDone, 0, true)
		want := 20
		if i == probeAfter-1 {
			want = 17
		}
		if got := f.limit(); got != want {
			t.Fatalf("window %d: limit %d, want %d", i, got, want)
		}
	}
	f.batch(minSamples, 1500*time.Microsecond, core.EndDone, 0, true) // lets the earlier requests end
	f.batch(minSamples, 900*time.Microsecond, core.EndDone, 0, true)
	if st := f.a.Stats(); st.Limit != 17 || st.Baseline != 2*time.Millisecond {
		t.Fatalf("after the probe's first two windows: %+v, want limit 17, baseline 2ms", st)
	}
	f.batch(minSamples, 1100*time.Microsecond, core.EndDone, 0, true)
	if st := f.a.Stats(); st.Limit != 20 || st.Baseline != time.Millisecond {
		t.Fatalf("after the probe: %+v, want limit 20, baseline 1ms", st)
	}
	// The latency is now 1.1 below the target: the limit rises, and the
	// next probe comes probeAgain windows later.
	f.batch(minSamples, time.Millisecond, core.EndDone, 0, true)
	if got := f.limit(); got != 22 {
		t.Fatalf("limit %d, want 22", got)
	}
	f.batch(minSamples, time.Millisecond, core.EndDone, 0, true)
	if got := f.limit(); got != 20 || f.a.est.probing != 3 {
		t.Fatalf("limit %d, probing %d; want 20 (24.2/1.21), the next probe", got, f.a.est.probing)
	}
}

// TestAdaptiveBaselineDecays: windows that refuse nothing measure the
// service as it is, and the baseline moves an eighth of the way to each
// one's mean, up and then down.
func TestAdaptiveBaselineDecays(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 40})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	for _, want := range []time.Duration{1125000, 1234375, 1330078} { // b += (2ms − b)/8
		f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, false)
		if got := f.a.Stats().Baseline; got != want {
			t.Fatalf("baseline %v, want %v", got, want)
		}
	}
	f.batch(minSamples, 500*time.Microsecond, core.EndDone, 0, false)
	if got, want := f.a.Stats().Baseline, time.Duration(1226318); got != want { // 1330078.125 + (500000 − 1330078.125)/8
		t.Fatalf("baseline %v, want %v", got, want)
	}
	if got := f.limit(); got != 40 {
		t.Fatalf("limit %d, want 40: never half full, it holds", got)
	}
}

// TestAdaptiveStraySlow: one request of a window of 16 that takes a
// thousand times the baseline (a GC pause) counts as 8 × the baseline,
// and the window's spread keeps the limit where it is: the mean,
// (15 × 1 + 8)/16 = 1.44 ms, is within a standard error (0.42 ms) of
// the target, 1.1 ms. (Uncapped, the mean would be 63 ms.)
func TestAdaptiveStraySlow(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(time.Millisecond)
	f.clk.Advance(2 * time.Millisecond)
	var toks []Token
	for range minSamples {
		tok, _ := f.a.Acquire(Normal, 1)
		toks = append(toks, tok)
	}
	f.clk.Advance(time.Millisecond)
	for _, tok := range toks[1:] {
		tok.End(core.EndDone)
	}
	f.clk.Advance(time.Second)
	toks[0].End(core.EndDone)
	if st := f.a.Stats(); st.Limit != 20 || st.Latency != 1437500 {
		t.Fatalf("%+v, want limit 20, latency 1.4375ms", st)
	}
}

// TestAdaptiveSampling: under a limit of 128 or more only one admission
// in sampleEvery is timed, in turn; below, every one.
func TestAdaptiveSampling(t *testing.T) {
	for _, c := range []struct{ limit, every int }{{100, 1}, {127, 1}, {128, 2}, {256, 4}, {1000, 8}} {
		if got := sampleEvery(int64(c.limit)); got != int64(c.every) {
			t.Errorf("sampleEvery(%d) = %d, want %d", c.limit, got, c.every)
		}
		f := newFixture(t, AdaptiveConfig{InitialLimit: c.limit})
		timed := 0
		for range 64 {
			if tok, _ := f.a.Acquire(Normal, 1); tok.sampled {
				timed++
			}
		}
		if timed != 64/c.every {
			t.Errorf("limit %d: %d of 64 timed, want %d", c.limit, timed, 64/c.every)
		}
	}
}

// TestAdaptiveLowClassGrows: a service that gets only the lowest
// priority, admitted below a third of the limit, never has half the
// limit in flight; its refusals show that the limit binds, and with the
// latency at the baseline it grows.
func TestAdaptiveLowClassGrows(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 60})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	for _, want := range []int{66, 73} {
		f.clk.Advance(2 * time.Millisecond)
		var toks []Token
		for {
			tok, ok := f.a.Acquire(-100, 1)
			if !ok {
				break
			}
			toks = append(toks, tok)
		}
		f.clk.Advance(time.Millisecond)
		for _, tok := range toks {
			tok.End(core.EndDone)
		}
		if got := f.limit(); got != want || len(toks) < minSamples {
			t.Fatalf("limit %d after %d admitted, want %d", got, len(toks), want)
		}
	}
}

// TestAdaptiveFrozenClock: windows whose requests took no time (a clock
// that does not move, or reads coarsely) measure nothing and change
// nothing; the limit works on once the clock moves.
func TestAdaptiveFrozenClock(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	for range 20 {
		toks := make([]Token, minSamples)
		for i := range toks {
			toks[i], _ = f.a.Acquire(Normal, 1)
		}
		for _, tok := range toks {
			tok.End(core.EndDone)
		}
	}
	if st := f.a.Stats(); st.Limit != 20 || st.Baseline != 0 || st.Latency != 0 {
		t.Fatalf("%+v after windows of no latency, want limit 20 and nothing measured", st)
	}
	f.warm(time.Millisecond)
	f.batch(20, time.Millisecond, core.EndDone, 0, false)
	if got := f.limit(); got != 22 {
		t.Fatalf("limit %d, want 22", got)
	}
}

// TestAdaptiveSlowStart: a floor of 1 starts at a limit of 1, so that
// the first baseline is measured with no queue (the default floor, 2,
// starts at 2). The warm-up's windows (one ignored, one the first
// baseline), each of twice the limit (at least slowSamples), leave the
// limit alone; then each window that refuses requests and is not past
// the band doubles it; the first past the band holds it, and a second
// in a row ends the slow start and cuts by the gradient. Eight windows
// in a row that refuse nothing turn it on again, and the next flat
// window that refuses doubles the limit.
func TestAdaptiveSlowStart(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{MinLimit: 1})
	if f.limit() != 1 || !f.a.est.slow {
		t.Fatalf("limit %d, slow start %v; want 1, on", f.limit(), f.a.est.slow)
	}
	window := func(lat time.Duration, refuse bool) { // one window of twice the limit (4 to 16), the limit's worth at a time
		for left := f.a.est.slowNeed(); left > 0; left -= min(left, f.limit()) {
			f.batch(min(left, f.limit()), lat, core.EndDone, 0, refuse)
		}
	}
	for range warmWindows {
		window(time.Millisecond, true)
	}
	if st := f.a.Stats(); st.Limit != 1 || st.Baseline != time.Millisecond {
		t.Fatalf("after the warm-up: %+v, want limit 1, baseline 1ms", st)
	}
	for _, want := range []int{2, 4, 8, 16} {
		window(time.Millisecond, true)
		if got := f.limit(); got != want {
			t.Fatalf("limit %d, want %d", got, want)
		}
	}
	f.batch(16, time.Millisecond, core.EndDone, 0, true)
	if got := f.limit(); got != 32 {
		t.Fatalf("limit %d, want 32", got)
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true) // past the band once: held
	if st := f.a.Stats(); st.Limit != 32 || !f.a.est.slow {
		t.Fatalf("once past the band: %+v, slow start %v; want limit 32, on", st, f.a.est.slow)
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true) // twice: 32 × 1.1/2 = 17.6
	if st := f.a.Stats(); st.Limit != 18 || st.Baseline != time.Millisecond || f.a.est.slow {
		t.Fatalf("past the knee: %+v, slow start %v; want limit 18, baseline 1ms, off", st, f.a.est.slow)
	}
	for i := range calmWindows {
		if f.a.est.slow {
			t.Fatalf("slow start on after %d calm windows, want %d", i, calmWindows)
		}
		f.batch(minSamples, time.Millisecond, core.EndDone, 0, false)
	}
	if !f.a.est.slow {
		t.Fatalf("slow start off after %d calm windows", calmWindows)
	}
	before := f.a.est.limit
	f.batch(minSamples, time.Millisecond, core.EndDone, 0, true)
	if got := f.a.est.limit; got != 2*before {
		t.Fatalf("limit %v after a flat window that refused, want 2 × %v", got, before)
	}
}

// TestAdaptiveRebaseHold: a limit that a run of cuts has halved is held
// for a window, so that the next window measures what was admitted under
// it; if the latency did not fall, the service itself is slower: the
// baseline is rebased and the slow start finds the knee again. (Cut on
// each window, the limit would reach the floor first.)
func TestAdaptiveRebaseHold(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 40})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	window := func() { // minSamples requests at 2 ms, at most the limit at a time
		for left := minSamples; left > 0; left -= min(left, f.limit()) {
			f.batch(min(left, f.limit()), 2*time.Millisecond, core.EndDone, 0, true)
		}
	}
	for i, want := range []float64{22, 12.1, 12.1} { // 40 × 1.1/2 = 22; 22 × 0.55; held
		window()
		if got := f.a.est.limit; math.Abs(got-want) > 1e-9 || f.a.Stats().Baseline != time.Millisecond {
			t.Fatalf("window %d: limit %v, baseline %v; want %v, 1ms", i, got, f.a.Stats().Baseline, want)
		}
	}
	window()
	if st := f.a.Stats(); st.Baseline != 2*time.Millisecond || st.Limit != 12 || !f.a.est.slow {
		t.Fatalf("after the held window: %+v, slow start %v; want baseline 2ms, limit 12, slow start on", st, f.a.est.slow)
	}
	window()
	if got := f.limit(); got != 24 {
		t.Fatalf("limit %d, want 24 (doubled)", got)
	}
}
