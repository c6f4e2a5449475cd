package overload

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

var t0 = time.Unix(1_800_000_000, 0)

// sampler runs a CPU reader's goroutine on a fake ticker: tick moves the
// fake clock to at and waits for the sample.
type sampler struct {
	c       *CPU
	clock   *coretest.Clock
	ticks   chan time.Time
	sampled chan struct{}
	stopped chan struct{}
}

func newSampler(t *testing.T, cfg CPUConfig, d cpuDeps) *sampler {
	t.Helper()
	s := &sampler{clock: coretest.NewClock(t0), ticks: make(chan time.Time),
		sampled: make(chan struct{}), stopped: make(chan struct{})}
	cfg.Clock = s.clock
	c, err := newCPU(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	c.onSample = func() { s.sampled <- struct{}{} }
	c.start(s.ticks, func() { close(s.stopped) })
	t.Cleanup(func() { c.Close() })
	s.c = c
	return s
}

func (s *sampler) tick(at time.Time) {
	s.clock.Set(at)
	s.ticks <- at
	<-s.sampled
}

// Each reading is the CPU time used since the last sample over what the
// group may use in that time: exact where the arithmetic is.
func TestCPUReadsTheQuota(t *testing.T) {
	dt := 250 * time.Millisecond
	for _, tr := range trees {
		for _, load := range []float64{0, 0.8, 1, 1.2} {
			f := loadTree(t, tr.name)
			f.set(tr.usage, tr.counter(0))
			// A smoothing far below the interval: the reading is the sample.
			s := newSampler(t, CPUConfig{FS: f, Smoothing: 1}, cpuDeps{numCPU: 8})
			used := int64(load * tr.limit * float64(dt))
			f.set(tr.usage, tr.counter(used))
			s.tick(t0.Add(dt))
			want := min(load, 1) // use past the quota (bursts) reads as 1
			if got := s.c.Load(); got != want {
				t.Errorf("%s at %v of %v CPUs: read %v, want %v", tr.name, load, tr.limit, got, want)
			}
		}
	}
}

// Over jittered intervals and loads, the v1 and v2 counters read within 3
// points of the true load (the goal; the worst error is logged).
func TestCPUAccuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(33))
	for _, tr := range trees {
		for _, machine := range []int{8, 2} {
			f := loadTree(t, tr.name)
			f.set(tr.usage, tr.counter(0))
			s := newSampler(t, CPUConfig{FS: f, Smoothing: 1}, cpuDeps{numCPU: machine})
			cores := min(tr.limit, float64(machine))
			at, used, worst := t0, 0.0, 0.0
			for range 200 {
				load := rng.Float64()
				dt := 200*time.Millisecond + time.Duration(rng.Int63n(int64(100*time.Millisecond)))
				at, used = at.Add(dt), used+load*cores*float64(dt)
				f.set(tr.usage, tr.counter(int64(used)))
				s.tick(at)
				worst = max(worst, math.Abs(s.c.Load()-load))
			}
			if worst > 0.03 {
				t.Errorf("%s on %d CPUs: worst error %.4f points of 1, want <= 0.03", tr.name, machine, worst)
			}
			t.Logf("%s on %d CPUs (%v usable): worst error %.2g", tr.name, machine, cores, worst)
		}
	}
}

// stepCrossing steps the load from idle to saturated at offset past a
// tick, samples every interval with the given smoothing, and returns how
// long after the step the reading first reached 0.8.
func stepCrossing(t *testing.T, smoothing time.Duration, offset time.Duration) time.Duration {
	tr := trees[0]
	f := loadTree(t, tr.name)
	f.set(tr.usage, tr.counter(0))
	s := newSampler(t, CPUConfig{FS: f, Smoothing: smoothing}, cpuDeps{numCPU: 8})
	interval := 250 * time.Millisecond
	step := t0.Add(2*time.Second + offset)
	for at := t0.Add(interval); at.Before(t0.Add(time.Minute)); at = at.Add(interval) {
		busy := max(0, at.Sub(step))
		f.set(tr.usage, tr.counter(int64(float64(busy)*tr.limit)))
		s.tick(at)
		if at.After(step) && s.c.Load() >= 0.8 {
			return at.Sub(step)
		}
	}
	t.Fatal("the reading never reached 0.8")
	return 0
}

// The default smoothing reaches 0.8 within 1 s of a step from idle to
// saturated, wherever the step falls between samples; without
// smoothing it would cross at the first whole sample, and kratos's
// average (0.95 per 500 ms) takes 16 s.
func TestCPUStepResponse(t *testing.T) {
	worst := time.Duration(0)
	for offset := time.Duration(0); offset < 250*time.Millisecond; offset += 5 * time.Millisecond {
		worst = max(worst, stepCrossing(t, 0, offset))
	}
	if worst > time.Second {
		t.Fatalf("the reading reached 0.8 %v after the step, want <= 1s", worst)
	}
	// 0.95^n <= 0.2 at n = 32 samples of 500 ms.
	aegis := time.Duration(math.Ceil(math.Log(0.2)/math.Log(0.95))) * 500 * time.Millisecond
	t.Logf("0 -> 1 step: 0.8 reached within %v (default 250ms / 400ms); kratos's EMA: %v", worst, aegis)
	if d := stepCrossing(t, 2*time.Second, 0); d <= time.Second {
		t.Fatalf("a 2s smoothing crossed in %v: the test cannot tell smoothings apart", d)
	}
}

// A sample that cannot be read is skipped and the reading holds; a
// counter that goes back (a new group) starts the count again.
func TestCPUSampleErrors(t *testing.T) {
	tr := trees[0]
	f := loadTree(t, tr.name)
	f.set(tr.usage, tr.counter(1e9))
	s := newSampler(t, CPUConfig{FS: f, Smoothing: 1}, cpuDeps{numCPU: 8})
	f.set(tr.usage, tr.counter(1e9+100e6))
	s.tick(t0.Add(250 * time.Millisecond))
	if got := s.c.Load(); got != 0.8 {
		t.Fatalf("read %v, want 0.8", got)
	}
	f.remove(tr.usage)
	s.tick(t0.Add(500 * time.Millisecond))
	if got := s.c.Load(); got != 0.8 {
		t.Fatalf("with the counter gone: %v, want 0.8 held", got)
	}
	f.set(tr.usage, tr.counter(0))
	s.tick(t0.Add(750 * time.Millisecond))
	f.set(tr.usage, tr.counter(25e6))
	s.tick(t0.Add(time.Second))
	if got := s.c.Load(); got != 0.2 {
		t.Fatalf("after a reset: %v, want 0.2 (25ms of 125ms)", got)
	}
}

// With no cgroup it reads the process's CPU time over the machine's CPUs.
func TestCPUProcessFallback(t *testing.T) {
	used := int64(0)
	proc := func() (int64, error) { return used, nil }
	s := newSampler(t, CPUConfig{FS: &memFS{}, Smoothing: 1}, cpuDeps{numCPU: 4, procTime: proc})
	if s.c.source != "process" {
		t.Fatalf("source %q", s.c.source)
	}
	used = int64(500 * time.Millisecond)
	s.tick(t0.Add(250 * time.Millisecond))
	if got := s.c.Load(); got != 0.5 {
		t.Fatalf("read %v, want 0.5 (500ms of 4 CPUs' 1s)", got)
	}
	if _, err := newCPU(CPUConfig{FS: &memFS{}}, cpuDeps{numCPU: 4}); !errors.Is(err, errNoProcTime) {
		t.Fatalf("with nothing to read: %v", err)
	}
	broken := func() (int64, error) { return 0, errors.New("no rusage") }
	if _, err := newCPU(CPUConfig{FS: &memFS{}}, cpuDeps{numCPU: 4, procTime: broken}); err == nil || !strings.Contains(err.Error(), "no rusage") {
		t.Fatalf("with an unreadable process time: %v", err)
	}
}

func TestCPUConfigErrors(t *testing.T) {
	for _, cfg := range []CPUConfig{{Interval: -1}, {Smoothing: -1}} {
		if _, err := NewCPU(cfg); err == nil || !strings.HasPrefix(err.Error(), "overload: ") {
			t.Errorf("NewCPU(%+v): %v", cfg, err)
		}
	}
}

// Close stops the goroutine and its ticker, once however often called.
func TestCPUClose(t *testing.T) {
	s := newSampler(t, CPUConfig{FS: &memFS{}}, cpuDeps{numCPU: 1, procTime: func() (int64, error) { return 0, nil }})
	s.c.Close()
	select {
	case <-s.stopped:
	default:
		t.Fatal("Close returned before the ticker stopped")
	}
	s.c.Close()
}
