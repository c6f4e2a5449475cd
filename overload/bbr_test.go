package overload

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// fakeCPU is an injected CPU signal.
type fakeCPU struct{ bits atomic.Uint64 }

func (f *fakeCPU) set(v float64) { f.bits.Store(math.Float64bits(v)) }
func (f *fakeCPU) load() float64 { return math.Float64frombits(f.bits.Load()) }

func newTestBBR(t *testing.T, cfg BBRConfig) (*BBR, *coretest.Clock, *fakeCPU) {
	t.Helper()
	clock, cpu := coretest.NewClock(t0), &fakeCPU{}
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	if cfg.CPU == nil {
		cfg.CPU = cpu.load
	}
	b, err := NewBBR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, clock, cpu
}

var bg = context.Background()

// complete runs n requests of each latency in rts at once, ending them e,
// from the start of the next bucket; the clock is left at the start of
// the bucket after theirs.
func complete(t *testing.T, b *BBR, clock *coretest.Clock, n int, e core.Ending, rts ...time.Duration) {
	t.Helper()
	w := time.Duration(b.win.width)
	start := clock.Time().Truncate(w).Add(w)
	clock.Set(start)
	leases := make([]core.Lease, n*len(rts))
	for i := range leases {
		d, err := b.Allow(bg, "", 1)
		if err != nil || !d.Allowed {
			t.Fatalf("priming: %+v, %v", d, err)
		}
		leases[i] = d.Lease
	}
	for i, rt := range rts {
		clock.Set(start.Add(rt))
		for _, l := range leases[i*n : (i+1)*n] {
			l.End(bg, e)
		}
	}
	clock.Set(clock.Time().Truncate(w).Add(w))
}

// hold admits a request that must be admitted and returns its lease.
func hold(t *testing.T, b *BBR, ctx context.Context, cost int) core.Lease {
	t.Helper()
	d, err := b.Allow(ctx, "", cost)
	if err != nil || !d.Allowed || d.Shed || d.Lease.IsZero() {
		t.Fatalf("want an admission, got %+v, %v (in flight %d)", d, err, b.inFlight.Load())
	}
	return d.Lease
}

// shed asserts a refusal with the given wait.
func shed(t *testing.T, b *BBR, ctx context.Context, cost int, retry time.Duration) core.Decision {
	t.Helper()
	d, err := b.Allow(ctx, "", cost)
	if err != nil || d.Allowed || !d.Shed || !d.Lease.IsZero() || d.RetryAfter != retry {
		t.Fatalf("want a shed with RetryAfter %v, got %+v, %v (in flight %d)", retry, d, err, b.inFlight.Load())
	}
	if err := d.Limit.Validate(); err != nil {
		t.Fatalf("the shed's Limit %+v: %v", d.Limit, err)
	}
	return d
}

// Below the threshold every request is admitted, however many are in
// flight.
func TestBBRBelowThreshold(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 100, core.EndDone, 5*time.Millisecond)
	cpu.set(0.79)
	for range 1000 {
		hold(t, b, bg, 1)
	}
	if st := b.Stats(); st.InFlight != 1000 || st.Limit != 5 || st.Shedding {
		t.Fatalf("stats %+v", st)
	}
}

// Past the threshold, in flight is capped at the best throughput of a
// bucket times the least latency: 100 per 100ms × 5ms = 5.
func TestBBRLittlesLaw(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 100, core.EndDone, 5*time.Millisecond)
	cpu.set(0.8)
	var leases []core.Lease
	for range 4 {
		leases = append(leases, hold(t, b, bg, 1))
	}
	d, err := b.Allow(bg, "", 1)
	if err != nil || !d.Allowed || d.Remaining != 0 || d.Limit != core.InFlight(5).WithName("bbr") {
		t.Fatalf("the fifth: %+v, %v", d, err)
	}
	leases = append(leases, d.Lease)
	d = shed(t, b, bg, 1, time.Millisecond) // one over, at 1ms a completion
	if want := core.InFlight(5).WithName("bbr"); d.Limit != want {
		t.Fatalf("Limit %+v, want %+v", d.Limit, want)
	}
	shed(t, b, bg, 20, 20*time.Millisecond)
	leases[0].Release(bg)
	leases[1].End(bg, core.EndDropped)
	hold(t, b, bg, 2) // 3 + 2 fit
	shed(t, b, bg, 1, time.Millisecond)
	if st := b.Stats(); st.InFlight != 5 || st.Limit != 5 || st.MaxThroughput != 1000 ||
		st.MinLatency != 5*time.Millisecond || !st.Shedding || st.CPU != 0.8 {
		t.Fatalf("stats %+v", st)
	}
}

// Under the limit the lowest priority goes first: Sheddable under half
// the bound, Critical up to 1¼ of it.
func TestBBRPriorities(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 100, core.EndDone, 8*time.Millisecond) // bound 8
	cpu.set(1)
	low, crit := NewContext(bg, Sheddable), NewContext(bg, Critical)
	for range 4 {
		hold(t, b, low, 1)
	}
	shed(t, b, low, 1, time.Millisecond)
	for range 4 {
		hold(t, b, bg, 1)
	}
	shed(t, b, bg, 1, time.Millisecond)
	shed(t, b, low, 1, 5*time.Millisecond)
	hold(t, b, crit, 1)
	hold(t, b, crit, 1)
	shed(t, b, crit, 1, time.Millisecond)
	shed(t, b, NewContext(bg, 100), 1, time.Millisecond)
}

// The latency is the least of the buckets' means (a raw minimum over-sheds,
// kratos #59), in nanoseconds (kratos rounds up to whole milliseconds).
func TestBBRLatency(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 50, core.EndDone, 2*time.Millisecond, 6*time.Millisecond)
	complete(t, b, clock, 100, core.EndDone, 9*time.Millisecond)
	if st := b.Stats(); st.Limit != 4 || st.MinLatency != 4*time.Millisecond {
		t.Fatalf("want 100 × mean 4ms / 100ms = 4, got %+v", st)
	}
	// 4000 requests of 250µs in a bucket: 10 in flight, where a latency
	// rounded up to 1ms would allow 40.
	b, clock, cpu = newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 4000, core.EndDone, 250*time.Microsecond)
	cpu.set(0.9)
	for range 10 {
		hold(t, b, bg, 1)
	}
	shed(t, b, bg, 1, time.Millisecond) // 25µs a completion, at least 1ms
	if st := b.Stats(); st.Limit != 10 || st.MinLatency != 250*time.Microsecond {
		t.Fatalf("stats %+v", st)
	}
}

// The bucket in progress does not count until it ends, and a bucket
// older than the window not at all: with nothing to go by, one request
// at a time, retried a bucket later.
func TestBBRWindow(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	w := time.Duration(b.win.width)
	// 100 requests started at the end of one bucket end early in the next,
	// before any decision there.
	clock.Set(clock.Time().Truncate(w).Add(w - time.Millisecond))
	var leases []core.Lease
	for range 100 {
		leases = append(leases, hold(t, b, bg, 1))
	}
	clock.Advance(2 * time.Millisecond)
	for _, l := range leases {
		l.Release(bg)
	}
	cpu.set(0.9)
	hold(t, b, bg, 3)                       // nothing in flight: admitted, whatever the bound
	shed(t, b, bg, 1, 300*time.Millisecond) // nothing to go by: a bucket a unit
	clock.Set(clock.Time().Truncate(w).Add(w))
	if st := b.Stats(); st.Limit != 2 || st.MaxThroughput != 1000 || st.MinLatency != 2*time.Millisecond {
		t.Fatalf("a bucket on: %+v", st)
	}
	shed(t, b, bg, 1, 2*time.Millisecond)
	clock.Advance(b.span - 2*w)
	if st := b.Stats(); st.MaxThroughput != 1000 {
		t.Fatalf("the last bucket of the window: %+v", st)
	}
	clock.Advance(w)
	if st := b.Stats(); st.MaxThroughput != 0 || st.MinLatency != 0 || st.Limit != 1 {
		t.Fatalf("a window on: %+v", st)
	}
	shed(t, b, bg, 2, 400*time.Millisecond)
}

// After a shed past the threshold the limit holds for CoolOff with the
// CPU below it, counted from the last such shed; sheds in the cool-off
// do not extend it.
func TestBBRCoolOff(t *testing.T) {
	for _, coolOff := range []time.Duration{0, -1, 300 * time.Millisecond} {
		b, clock, cpu := newTestBBR(t, BBRConfig{CoolOff: coolOff})
		complete(t, b, clock, 100, core.EndDone, 5*time.Millisecond)
		cpu.set(0.9)
		for range 5 {
			hold(t, b, bg, 1)
		}
		shed(t, b, bg, 1, time.Millisecond)
		clock.Advance(200 * time.Millisecond)
		shed(t, b, bg, 1, time.Millisecond) // the last shed while hot
		cpu.set(0.5)
		want := map[time.Duration]time.Duration{0: time.Second, -1: 0, 300 * time.Millisecond: 300 * time.Millisecond}[coolOff]
		if want > 0 {
			clock.Advance(want - 1)
			shed(t, b, bg, 1, time.Millisecond)
			if !b.Stats().Shedding {
				t.Fatalf("CoolOff %v: not shedding in the cool-off", coolOff)
			}
			clock.Advance(1)
		}
		hold(t, b, bg, 1)
		if b.Stats().Shedding {
			t.Fatalf("CoolOff %v: shedding after the cool-off", coolOff)
		}
	}
	// Hot with no shed starts no cool-off.
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 100, core.EndDone, 5*time.Millisecond)
	cpu.set(0.9)
	hold(t, b, bg, 1)
	cpu.set(0.1)
	for range 10 {
		hold(t, b, bg, 1)
	}
}

// A lease ended EndIgnored counts nothing; one ended EndDropped counts as
// a completion (it held its slot as long); a lease ends once, even once
// its record serves another admission.
func TestBBRLeaseEnd(t *testing.T) {
	b, clock, _ := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 30, core.EndIgnored, 5*time.Millisecond)
	if st := b.Stats(); st.MaxThroughput != 0 || st.InFlight != 0 {
		t.Fatalf("ignored endings counted: %+v", st)
	}
	complete(t, b, clock, 30, core.EndDropped, 5*time.Millisecond)
	if st := b.Stats(); st.MaxThroughput != 300 || st.MinLatency != 5*time.Millisecond {
		t.Fatalf("dropped endings: %+v", st)
	}
	l := hold(t, b, bg, 3)
	l.End(bg, core.EndDone)
	l.End(bg, core.EndDone)
	l.Release(bg)
	if st := b.Stats(); st.InFlight != 0 {
		t.Fatalf("a lease ended thrice: in flight %d", st.InFlight)
	}
	// The next admission's record is l's, recycled (unless the race
	// detector drops it): l ended again ends nothing of it.
	m := hold(t, b, bg, 2)
	l.End(bg, core.EndDone)
	if st := b.Stats(); st.InFlight != 2 {
		t.Fatalf("a stale lease ended the next admission: in flight %d, want 2", st.InFlight)
	}
	m.Release(bg)
	if _, err := b.Allow(bg, "", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("cost 0: %v", err)
	}
	if err := b.Refund(bg, "", 0); !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("refund 0: %v", err)
	}
	if err := b.Refund(bg, "", 1); err != nil {
		t.Fatal(err)
	}
}

// Many goroutines at one frozen instant admit exactly the bound, and with
// requests ending meanwhile never exceed it.
func TestBBRExactAdmission(t *testing.T) {
	b, clock, cpu := newTestBBR(t, BBRConfig{})
	complete(t, b, clock, 1000, core.EndDone, 5*time.Millisecond) // bound 50
	cpu.set(0.95)
	raceHook = runtime.Gosched
	defer func() { raceHook = nil }()
	var admitted, over atomic.Int64
	var mu sync.Mutex
	var leases []core.Lease
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if d, _ := b.Allow(bg, "", 1); d.Allowed {
					admitted.Add(1)
					mu.Lock()
					leases = append(leases, d.Lease)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 50 || b.Stats().InFlight != 50 {
		t.Fatalf("admitted %d, in flight %d: want exactly 50", admitted.Load(), b.Stats().InFlight)
	}
	for _, l := range leases {
		l.Release(bg)
	}
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				d, _ := b.Allow(bg, "", 1+g%3)
				if n := b.inFlight.Load(); n > 50 {
					over.Store(n)
				}
				d.Lease.Release(bg)
			}
		}()
	}
	wg.Wait()
	if over.Load() != 0 || b.Stats().InFlight != 0 {
		t.Fatalf("in flight reached %d (bound 50); %d left", over.Load(), b.Stats().InFlight)
	}
}

func TestNewBBRErrors(t *testing.T) {
	for _, cfg := range []BBRConfig{
		{Threshold: 1.5}, {Threshold: -0.1}, {Threshold: math.NaN()}, {Window: -time.Second},
		{Buckets: 1}, {Buckets: -3}, {Window: time.Second, Buckets: 2000},
	} {
		cfg.CPU = func() float64 { return 0 }
		if _, err := NewBBR(cfg); err == nil || !strings.HasPrefix(err.Error(), "overload: BBRConfig.") {
			t.Errorf("NewBBR(%+v): %v", cfg, err)
		}
	}
	if b, err := NewBBR(BBRConfig{Threshold: 1, Window: time.Second, Buckets: 1000, CPU: func() float64 { return 0 }}); err != nil || b.win.width != int64(time.Millisecond) {
		t.Fatalf("1ms buckets: %v", err)
	}
}

// With no CPU given, NewBBR reads this machine's and Close stops it.
func TestBBRDefaultCPU(t *testing.T) {
	b, err := NewBBR(BBRConfig{})
	if err != nil {
		if errors.Is(err, errNoProcTime) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if b.own == nil {
		t.Fatal("no CPU reader started")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if v := b.Stats().CPU; v < 0 || v > 1 {
		t.Fatalf("CPU %v", v)
	}
}

// A late sample older than its slot's bucket is dropped, not allowed to
// wipe the newer bucket; instants before 1970 fall in their own buckets.
func TestWindowKeepsNewerBuckets(t *testing.T) {
	w := newWindow(100, 10)
	w.add(1050, 5, 1) // bucket 10, slot 0
	w.add(50, 7, 2)   // bucket 0, slot 0 as well
	if s := w.snapshot(1150); s.maxPass != 1 || s.minRT != 5 || s.bound != 1 {
		t.Fatalf("snapshot %+v", s)
	}
	if w.index(-1) != -1 || w.index(-100) != -1 || w.index(-101) != -2 {
		t.Fatalf("index before 1970: %d %d %d", w.index(-1), w.index(-100), w.index(-101))
	}
	w.add(-150, 30, 4) // bucket -2, slot 8
	if s := w.snapshot(-50); s.maxPass != 4 || s.minRT != 30 {
		t.Fatalf("snapshot before 1970 %+v", s)
	}
}
