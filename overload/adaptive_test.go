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

// halves is one window of minSamples requests in two batches, for limits
// under minSamples (at most half of the window in flight at once).
func (f *fixture) halves(lat time.Duration, refuse bool) {
	f.t.Helper()
	f.batch(minSamples/2, lat, core.EndDone, 0, refuse)
	f.batch(minSamples/2, lat, core.EndDone, 0, refuse)
}

// warmHalves is warm in halves.
func (f *fixture) warmHalves(lat time.Duration) {
	f.t.Helper()
	for range warmWindows {
		f.halves(lat, false)
	}
	if got := f.a.Stats().Baseline; got != lat {
		f.t.Fatalf("baseline after the warm-up = %v, want %v", got, lat)
	}
}

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
// run at the limit / tol² (12 / 1.21: 10) and, finding the service at
// the baseline, change nothing. (Under kneeMin, where the gradient rules:
// TestAdaptiveKnee has the knee.)
func TestAdaptiveNoCreep(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 12})
	f.warmHalves(time.Millisecond)
	f.pastSlowStart()
	probes := 0
	for i := range 4 * probeAfter {
		lat := 1100 * time.Microsecond // a queue of a tenth
		if f.limit() < 12 {
			lat = time.Millisecond // the probe: no queue
			probes++
		}
		f.halves(lat, true)
		st := f.a.Stats()
		if st.Baseline != time.Millisecond || (st.Limit != 12 && st.Limit != 10) {
			t.Fatalf("window %d: baseline %v, limit %d; want 1ms, 12 (10 in a probe)", i, st.Baseline, st.Limit)
		}
	}
	if probes != 3*3 { // three probes of three windows
		t.Fatalf("%d windows probed, want 9", probes)
	}
}

// TestAdaptiveProbe: a service that got faster through a sustained
// overload leaves the baseline stale high; a probe finds it out. After
// probeAfter windows that refused, three windows run at limit/tol² =
// 12/1.21 = 9.9; the first is ignored, the next two measure 0.9 and
// 1.1 ms, 1 ms on average, below the baseline / tol: the baseline takes
// it, and the next probe comes probeAgain windows later. (probeAgain is
// 2: the test spells the windows out. A limit under kneeMin: its probe
// measures two windows, TestAdaptiveProbeWide has the others.)
func TestAdaptiveProbe(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 12})
	f.warmHalves(2 * time.Millisecond)
	f.pastSlowStart()
	for i := range probeAfter {
		f.halves(2200*time.Microsecond, true)
		want := 12
		if i == probeAfter-1 {
			want = 10
		}
		if got := f.limit(); got != want {
			t.Fatalf("window %d: limit %d, want %d", i, got, want)
		}
	}
	f.halves(1500*time.Microsecond, true) // lets the earlier requests end
	f.halves(900*time.Microsecond, true)
	if st := f.a.Stats(); st.Limit != 10 || st.Baseline != 2*time.Millisecond {
		t.Fatalf("after the probe's first two windows: %+v, want limit 10, baseline 2ms", st)
	}
	f.halves(1100*time.Microsecond, true)
	if st := f.a.Stats(); st.Limit != 12 || st.Baseline != time.Millisecond {
		t.Fatalf("after the probe: %+v, want limit 12, baseline 1ms", st)
	}
	// The latency is now 1.1 below the target: the limit rises to 13.2,
	// and the next probe comes probeAgain windows later, from 14.52.
	f.halves(time.Millisecond, true)
	if got := f.limit(); got != 13 {
		t.Fatalf("limit %d, want 13", got)
	}
	f.halves(time.Millisecond, true)
	if got := f.limit(); got != 12 || f.a.est.probing != 3 {
		t.Fatalf("limit %d, probing %d; want 12 (14.52/1.21), the next probe", got, f.a.est.probing)
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

// TestAdaptiveKnee: under a sustained overload at a limit of kneeMin or
// more, the limit is held at 1 + kneeShare × (tol − 1) = 1.055 times the
// knee, the limit at which requests begin to queue, once kneeWindows
// windows agree on it. The fixture's latency is that of a queue past a
// knee of 18: the baseline × limit / 18, so each window estimates the
// knee at 18. The first window (at 20: 1.111 ms) has the gradient cut
// the limit to 20 × 1.1 / 1.111 = 19.8, where the latency is the target;
// from the eighth the limit is 1.055 × 18 = 18.99. One window far from
// the knee (2 ms: a knee of 9.5) is held as noise; two in a row are a
// change, and the gradient cuts the limit to 18.99 × 1.1 / 2 = 10.44.
func TestAdaptiveKnee(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	queue := func() time.Duration {
		return time.Duration(math.Round(float64(time.Millisecond) * f.a.est.limit / 18))
	}
	for i := range kneeWindows {
		f.batch(minSamples, queue(), core.EndDone, 0, true)
		want := 20
		if i == kneeWindows-1 {
			want = 19
		}
		if got := f.limit(); got != want {
			t.Fatalf("window %d: limit %d (%.3f), want %d", i, got, f.a.est.limit, want)
		}
	}
	if k := f.a.est.knee.at; math.Abs(k-18) > 1e-3 {
		t.Fatalf("knee %.4f, want 18", k)
	}
	held := f.a.est.limit
	if math.Abs(held-1.055*18) > 1e-2 || f.a.est.probeDepth() != 1.1 {
		t.Fatalf("limit %.4f, probe depth %v; want 18.99, 1.1", held, f.a.est.probeDepth())
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true) // noise
	f.batch(minSamples, queue(), core.EndDone, 0, true)
	if got := f.a.est.limit; math.Abs(got-held) > 1e-2 {
		t.Fatalf("after one window far from the knee: limit %.4f, want %.4f", got, held)
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true)
	if got := f.a.est.limit; math.Abs(got-held) > 1e-2 {
		t.Fatalf("after the first of two windows far from the knee: limit %.4f, want %.4f", got, held)
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true)
	if got, want := f.a.est.limit, held*1.1/2; math.Abs(got-want) > 1e-6 {
		t.Fatalf("after two: limit %.4f, want %.4f (the gradient's cut)", got, want)
	}
}

// TestAdaptiveRestore: after an overload, the first window of a calm
// spell (calmWindows in a row that refused nothing) puts the limit back
// to where the calm load had it. A limit of 40 (16 in flight: not busy,
// so it does not move) is cut to 22 by an overloaded window (2 ms, 1.1 /
// 2 = 0.55); the calm windows after (8 in flight at a time: not busy
// either) leave it there until the eighth, which restores 40.
func TestAdaptiveRestore(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 40})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	for range calmWindows + 1 {
		f.batch(minSamples, time.Millisecond, core.EndDone, 0, false)
	}
	f.batch(minSamples, 2*time.Millisecond, core.EndDone, 0, true)
	if got := f.limit(); got != 22 {
		t.Fatalf("after the overload: limit %d, want 22", got)
	}
	for i := 1; i <= calmWindows; i++ {
		f.halves(time.Millisecond, false)
		want := 22
		if i == calmWindows {
			want = 40
		}
		if got := f.limit(); got != want {
			t.Fatalf("calm window %d: limit %d, want %d", i, got, want)
		}
	}
}

// TestAdaptiveProbeWide: a probe from a limit of kneeMin or more measures
// until probeFull requests or probeWindows windows, weighs each request
// alike, moves the baseline a quarter of the way when the two differ by
// less than two standard errors, and takes a mean lower than the
// baseline / tol only by two standard errors more. A probe from a lower
// limit measures two windows and takes the mean of their means whole
// below the baseline / tol.
func TestAdaptiveProbeWide(t *testing.T) {
	probe := func(from, first float64) *estimator {
		return &estimator{min: 2, max: 1000, tol: 1.1, base: 1e6, cv2: 0.25, limit: from / 1.1,
			probeFrom: from, probing: 1, n: minSamples,
			probe: probeState{first: first, sum: first * minSamples, n: minSamples, windows: 1}}
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*want }

	// 16 requests at 1 ms, then windows of 16 at 0.98 ms: the eighth
	// window is the last (probeWindows), 144 requests of mean 0.98222 ms,
	// standard error 1/24 of it; within two of the baseline, so a quarter.
	e := probe(20, 1e6)
	calls := 0
	for e.probing == 1 {
		e.probeWindow(0.98e6)
		calls++
	}
	m := (16*1e6 + 128*0.98e6) / 144
	if want := 1e6 + (m-1e6)/4; calls != probeWindows || !near(e.base, want) || e.limit != 20 || e.saturated != 0 {
		t.Fatalf("wide probe: %d windows, baseline %.1f, limit %v, saturated %d; want %d, %.1f, 20, 0", calls, e.base, e.limit, e.saturated, probeWindows, want)
	}

	// 0.8 ms throughout: below 1 / 1.1 − 2 × 0.8 / 24 = 0.8424 ms, taken
	// whole, and by more than 5 %: the next probe comes soon.
	e = probe(20, 0.8e6)
	for e.probing == 1 {
		e.probeWindow(0.8e6)
	}
	if !near(e.base, 0.8e6) || e.saturated != probeAfter-probeAgain {
		t.Fatalf("wide probe, clearly lower: baseline %.1f, saturated %d; want 800000, %d", e.base, e.saturated, probeAfter-probeAgain)
	}

	// 0.89 ms throughout: under 1 / 1.1 ms, but not by two standard
	// errors (0.89 / 24 each): half-way, since it is more than two from
	// the baseline.
	e = probe(20, 0.89e6)
	for e.probing == 1 {
		e.probeWindow(0.89e6)
	}
	if !near(e.base, 0.945e6) {
		t.Fatalf("wide probe, lower within the noise: baseline %.1f, want 945000", e.base)
	}

	// From 12: two windows, (0.8 + 0.9) / 2 = 0.85 ms < 1 / 1.1, whole.
	e = probe(12, 0.8e6)
	e.probeWindow(0.9e6)
	if e.probing != 0 || !near(e.base, 0.85e6) {
		t.Fatalf("narrow probe: probing %d, baseline %.1f; want 0, 850000", e.probing, e.base)
	}
}

// TestAdaptiveKneeFaster: at the knee, a latency that falls far (two
// windows in a row estimate a knee beyond kneeJump) may be a faster
// service under a stale baseline rather than more capacity: a probe runs
// (by tol, from the held 18.99: 17.26) before the knee follows.
func TestAdaptiveKneeFaster(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	f.warm(time.Millisecond)
	f.pastSlowStart()
	for range 2 * fastGap {
		f.batch(minSamples, time.Duration(math.Round(float64(time.Millisecond)*f.a.est.limit/18)), core.EndDone, 0, true)
	}
	held := f.a.est.limit
	f.batch(minSamples, 500*time.Microsecond, core.EndDone, 0, true)
	if f.a.est.probing != 0 || f.a.est.limit != held {
		t.Fatalf("after one fast window: probing %d, limit %.4f; want 0, %.4f", f.a.est.probing, f.a.est.limit, held)
	}
	f.batch(minSamples, 500*time.Microsecond, core.EndDone, 0, true)
	if f.a.est.probing != 3 || math.Abs(f.a.est.limit-held/1.1) > 1e-9 || f.a.est.probeFrom != held {
		t.Fatalf("after two: probing %d, limit %.4f; want 3, %.4f", f.a.est.probing, f.a.est.limit, held/1.1)
	}
}

// TestAdaptiveKneeClimb: held at the knee, windows with no queue (the
// capacity grew) each estimate the knee at the limit, 1.055 × the knee:
// the CUSUM gains log(1.055) / 2 = 0.02677 a window, and with a standard
// error of 1 % it passes kneeClimb × 0.01 = 0.3 at the twelfth window
// (0.321; 0.294 at the eleventh), where the gradient takes over; until
// then the knee climbs by 1.055^(its weight) a window. Windows
// at the knee, 6 % either side of it by turns, never pass it.
func TestAdaptiveKneeClimb(t *testing.T) {
	ratio := 1 + kneeShare*0.1
	atKnee := func(e *estimator, mean float64) float64 {
		return e.atKnee(ratio*e.knee.at, mean, 0.01*mean, true, 1.5) // 1.5: the gradient's
	}
	e := &estimator{min: 2, max: 1000, tol: 1.1, base: 1e6, limit: ratio * 18}
	e.knee = kneeState{at: 18, run: kneeWindows, from: ratio * 18}
	for i := 1; i <= 12; i++ {
		run := float64(e.knee.run + 1)
		g := atKnee(e, 1e6)
		// Held, the knee climbing: by ratio^(its weight).
		if want := math.Pow(ratio, max(kneeWeight, 1/run)); i < 12 && math.Abs(g-want) > 1e-12 {
			t.Fatalf("window %d: %v, want the knee held (%v)", i, g, want)
		}
		if i == 12 && (g != 1.5 || e.knee.run != 1) {
			t.Fatalf("window 12: %v, run %d; want the gradient's 1.5, the knee started again", g, e.knee.run)
		}
	}
	e.knee = kneeState{at: 18, run: kneeWindows, from: ratio * 18}
	for i := range 1000 {
		mean := 1e6 * ratio * (1 + 0.06*float64(1-2*(i%2)))
		if g := atKnee(e, mean); g == 1.5 {
			t.Fatalf("window %d at the knee: the gradient took over", i)
		}
	}
}

// TestAdaptiveProbeLow: a probe at the knee that measures under the
// baseline by a standard error (0.95 ms over 144 requests against 1 ms,
// standard error 0.95 / 24) moves it a quarter of the way (within two
// standard errors), and the next probe comes probeAgain windows later,
// deeper: by tol × 1.055 instead of tol.
func TestAdaptiveProbeLow(t *testing.T) {
	e := &estimator{min: 2, max: 1000, tol: 1.1, base: 1e6, cv2: 0.25, limit: 20 / 1.1,
		probeFrom: 20, probing: 1, n: minSamples,
		probe: probeState{first: 0.95e6, sum: 0.95e6 * minSamples, n: minSamples, windows: 1}}
	e.knee = kneeState{at: 19, run: kneeWindows}
	if d := e.probeDepth(); d != 1.1 {
		t.Fatalf("probe depth at the knee %v, want 1.1", d)
	}
	for e.probing == 1 {
		e.probeWindow(0.95e6)
	}
	want := 1e6 + (0.95e6-1e6)/4
	if !e.probeLow || e.saturated != probeAfter-probeAgain || math.Abs(e.base-want) > 1e-3 {
		t.Fatalf("low: %v, saturated %d, baseline %.1f; want true, %d, %.1f", e.probeLow, e.saturated, e.base, probeAfter-probeAgain, want)
	}
	if d := e.probeDepth(); math.Abs(d-1.1*1.055) > 1e-12 {
		t.Fatalf("probe depth after a low probe %v, want 1.1 × 1.055", d)
	}
	e.knee.run = 0
	if d := e.probeDepth(); math.Abs(d-1.21) > 1e-12 {
		t.Fatalf("probe depth off the knee %v, want 1.21", d)
	}
}
