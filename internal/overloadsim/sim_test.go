package overloadsim

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// logger is a controller that admits up to limit in flight and logs what
// it is told.
type logger struct {
	limit, inflight int
	admitted        []int64
	done            []done
}

type done struct {
	id      int64
	at      int64
	latency time.Duration
	dropped bool
}

func (l *logger) Admit(_ int64, r *Request) bool {
	if l.inflight >= l.limit {
		return false
	}
	l.inflight++
	l.admitted = append(l.admitted, r.ID)
	return true
}

func (l *logger) Done(now int64, r *Request, latency time.Duration, dropped bool) {
	l.inflight--
	l.done = append(l.done, done{r.ID, now, latency, dropped})
}

func (l *logger) Limit(int64) float64 { return float64(l.limit) }

const ms = int64(time.Millisecond)

// TestTinyCase: two workers, a fixed 10 ms service, five requests at 0,
// 1, 2, 3 and 25 ms, a limit of 3 in flight and an SLO of 15 ms. By hand:
// r0 and r1 start at once and end at 10 and 11; r2 is admitted (2 in
// flight) and waits; r3 finds 3 in flight and is shed; r2 starts at 10
// when r0 ends and ends at 20 (latency 18 > 15: dropped); r4 arrives at
// 25 to an idle server and ends at 35.
func TestTinyCase(t *testing.T) {
	l := &logger{limit: 3}
	r, err := Run(Config{
		Workers: 2, MeanService: 10 * time.Millisecond, Sigma: -1, SLOFactor: 1.5,
		Duration: 50 * time.Millisecond, Bin: 10 * time.Millisecond,
		Arrivals: []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 25 * time.Millisecond},
	}, func(*Env) (Controller, error) { return l, nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 1, 2, 4}; !reflect.DeepEqual(l.admitted, want) {
		t.Errorf("admitted %v, want %v", l.admitted, want)
	}
	want := []done{
		{0, 10 * ms, 10 * time.Millisecond, false},
		{1, 11 * ms, 10 * time.Millisecond, false},
		{2, 20 * ms, 18 * time.Millisecond, true},
		{4, 35 * ms, 10 * time.Millisecond, false},
	}
	if !reflect.DeepEqual(l.done, want) {
		t.Errorf("done %+v,\nwant %+v", l.done, want)
	}
	// Bins of 10 ms: arrivals in bin 0 (4, one shed) and 2; completions
	// in bins 1 (r0 at 10, r1 at 11), 2 (r2 at 20, late) and 3 (r4 at 35).
	type counts struct{ arrived, shed, completed, good int }
	var got []counts
	for _, b := range r.Bins {
		got = append(got, counts{b.Arrived, b.Shed, b.Completed, b.Good})
		if b.Capacity != 2 { // 2 workers × 10 ms / 10 ms
			t.Errorf("bin at %v: capacity %v, want 2", b.Start, b.Capacity)
		}
	}
	wantBins := []counts{{4, 1, 0, 0}, {0, 0, 2, 2}, {1, 0, 1, 0}, {0, 0, 1, 1}, {0, 0, 0, 0}}
	if !reflect.DeepEqual(got, wantBins) {
		t.Errorf("bins %v, want %v", got, wantBins)
	}
	if p := r.P99(10*time.Millisecond, 40*time.Millisecond); p != 18*time.Millisecond {
		t.Errorf("p99 %v, want 18ms", p)
	}
	if g := r.Goodput(0, 50*time.Millisecond); g != 0.3 { // 3 good of 10 possible
		t.Errorf("goodput %v, want 0.3", g)
	}
	if s := r.Refused(0, 50*time.Millisecond); s != 0.2 {
		t.Errorf("refused %v, want 0.2", s)
	}
}

// small is a server small enough for fast tests: 10 workers of 5 ms, a
// capacity of 2,000 requests a second.
func small(seed uint64, d time.Duration, load ...Step) Config {
	return Config{Seed: seed, Workers: 10, Duration: d, Load: load}
}

// TestSameSeedSameResult: a run is a function of its Config, bit for bit;
// another seed draws other requests.
func TestSameSeedSameResult(t *testing.T) {
	for _, a := range Anchors() {
		c := small(7, 3*time.Second, Step{0, 0.5}, Step{time.Second, 3})
		c.Classes = []Class{{1, 1}, {0, 4}}
		c.Tenants = []float64{1, 2}
		r1, err := Run(c, a.New)
		if err != nil {
			t.Fatal(err)
		}
		r2, _ := Run(c, a.New)
		if !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: two runs of one Config differ", a.Name)
		}
		c.Seed = 8
		r3, _ := Run(c, a.New)
		if reflect.DeepEqual(r1.Bins, r3.Bins) {
			t.Errorf("%s: seeds 7 and 8 gave the same run", a.Name)
		}
	}
}

// TestNoProtectionCollapses: at 2× capacity with no protection the queue
// grows without end, so after a second nothing is answered within the
// SLO. A static limit of the workers keeps the queue empty: the idle
// server's p99, and the server is a loss system whose refusals follow
// Erlang's B formula (20 erlangs offered to 10 workers: 53.8 % refused,
// 92.4 % of capacity carried), whatever the service time's distribution.
func TestNoProtectionCollapses(t *testing.T) {
	c := small(1, 3*time.Second, Step{0, 2})
	none, err := Run(c, NewUnprotected)
	if err != nil {
		t.Fatal(err)
	}
	if g := none.Goodput(time.Second, 3*time.Second); g != 0 {
		t.Errorf("no protection at 2x: goodput %.3f, want 0", g)
	}
	if p := none.P99(2*time.Second, 3*time.Second); p < time.Second {
		t.Errorf("no protection at 2x: p99 %v, want the queue's seconds", p)
	}
	static, err := Run(c, NewStatic)
	if err != nil {
		t.Fatal(err)
	}
	erlangB := 1.0
	for n := 1; n <= 10; n++ {
		erlangB = 20 * erlangB / (float64(n) + 20*erlangB)
	}
	if g, want := static.Goodput(time.Second, 3*time.Second), 20*(1-erlangB)/10; math.Abs(g-want) > 0.02 {
		t.Errorf("static limit at 2x: goodput %.3f, want %.3f ± 0.02", g, want)
	}
	p99, unloaded := static.P99(time.Second, 3*time.Second), c.UnloadedP99()
	if p99 > unloaded*11/10 {
		t.Errorf("static limit at 2x: p99 %v, want within 10%% of the unloaded %v", p99, unloaded)
	}
	if s := static.Refused(time.Second, 3*time.Second); math.Abs(s-erlangB) > 0.02 {
		t.Errorf("static limit at 2x: refused %.3f, want %.3f ± 0.02", s, erlangB)
	}
}

// TestArrivalsAndDraws: the Poisson stream follows the schedule, and the
// classes and tenants their weights.
func TestArrivalsAndDraws(t *testing.T) {
	c := small(3, 4*time.Second, Step{0, 0.5}, Step{2 * time.Second, 2}, Step{3 * time.Second, 0})
	c.Classes = []Class{{1, 1}, {0, 3}}
	c.Tenants = []float64{3, 1}
	r, err := Run(c, NewUnprotected)
	if err != nil {
		t.Fatal(err)
	}
	count := func(from, to time.Duration) (n int) {
		for _, b := range r.span(from, to) {
			n += b.Arrived
		}
		return n
	}
	// 2,000 s⁻¹ × 0.5 × 2 s = 2,000; × 2 × 1 s = 4,000; then none.
	for _, w := range []struct {
		from, to time.Duration
		want     int
	}{{0, 2 * time.Second, 2000}, {2 * time.Second, 3 * time.Second, 4000}, {3 * time.Second, 4 * time.Second, 0}} {
		if n := count(w.from, w.to); n < w.want*95/100 || n > w.want*105/100 {
			t.Errorf("[%v, %v): %d arrivals, want %d ± 5%%", w.from, w.to, n, w.want)
		}
	}
	var class [2]int
	var tenant [2]int
	for _, b := range r.Bins {
		for k, cb := range b.Classes {
			class[k] += cb.Arrived
			for i, n := range cb.TenantArrived {
				tenant[i] += n
			}
		}
	}
	if s := float64(class[0]) / float64(class[0]+class[1]); s < 0.23 || s > 0.27 {
		t.Errorf("critical share %.3f, want 0.25", s)
	}
	if s := float64(tenant[0]) / float64(tenant[0]+tenant[1]); s < 0.73 || s > 0.77 {
		t.Errorf("tenant 0's share %.3f, want 0.75", s)
	}
}

// TestResize: halving the workers live halves the capacity counted from
// then on, and a full server serves half as much.
func TestResize(t *testing.T) {
	c := small(1, 2*time.Second, Step{0, 3})
	c.Resizes = []Resize{{At: time.Second, Workers: 5}}
	r, err := Run(c, NewUnprotected)
	if err != nil {
		t.Fatal(err)
	}
	if b := r.Bins[5]; b.Capacity != 200 {
		t.Errorf("capacity before: %v, want 200 (10 workers × 100 ms / 5 ms)", b.Capacity)
	}
	if b := r.Bins[15]; b.Capacity != 100 {
		t.Errorf("capacity after: %v, want 100", b.Capacity)
	}
	done := func(from, to time.Duration) (n int) {
		for _, b := range r.span(from, to) {
			n += b.Completed
		}
		return n
	}
	before, after := done(500*time.Millisecond, time.Second), done(1500*time.Millisecond, 2*time.Second)
	if x := float64(after) / float64(before); x < 0.45 || x > 0.55 {
		t.Errorf("completions after/before halving: %d/%d, want about half", after, before)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Duration: time.Second},
		{Duration: time.Second, Load: []Step{{time.Second, 1}}},
		{Load: []Step{{0, 1}}},
		{Duration: time.Second, Load: []Step{{0, -1}}},
		{Duration: time.Second, Load: []Step{{0, 1}}, Workers: -1},
		{Duration: time.Second, Load: []Step{{0, 1}}, Resizes: []Resize{{time.Second, 0}}},
		{Duration: time.Second, Load: []Step{{0, 1}}, Tenants: []float64{0}},
		{Duration: time.Second, Arrivals: []time.Duration{2, 1}},
	} {
		if _, err := Run(c, NewUnprotected); err == nil {
			t.Errorf("Run(%+v): no error", c)
		}
	}
}

// cpuLogger admits everything and reads the CPU at each call.
type cpuLogger struct {
	cpu  func() float64
	read []float64
}

func (c *cpuLogger) Admit(int64, *Request) bool {
	c.read = append(c.read, c.cpu())
	return true
}

func (c *cpuLogger) Done(int64, *Request, time.Duration, bool) { c.read = append(c.read, c.cpu()) }
func (c *cpuLogger) Limit(int64) float64                       { return 0 }

// TestCPU: two workers, 10 ms each; requests at 0, 0 and 30 ms, the CPU
// read at each arrival and end.
func TestCPU(t *testing.T) {
	c := &cpuLogger{}
	_, err := Run(Config{Workers: 2, MeanService: 10 * time.Millisecond, Sigma: -1, Duration: time.Second,
		Arrivals: []time.Duration{0, 0, 30 * time.Millisecond}}, func(env *Env) (Controller, error) {
		c.cpu = env.CPU()
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Arrival at 0: idle now; the second at 0: one of two busy now; an
	// end at 10: 1 over [0, 10]; the other at 10, the same instant: both
	// free now (a controller hears of an end once its worker is free);
	// arrival at 30: 0 over [10, 30]; end at 40: 0.5 over [30, 40].
	want := []float64{0, 0.5, 1, 0, 0, 0.5}
	if !reflect.DeepEqual(c.read, want) {
		t.Errorf("CPU reads %v, want %v", c.read, want)
	}
}

// TestSharedCase: one core shared by the requests in flight, a fixed 10
// ms service, requests at 0, 5, 16 and 17 ms, a limit of 3, at most one
// in flight beyond the core (MaxQueue 1) and an SLO of 16 ms. By hand:
// r0 runs alone until r1 comes at 5 (5 ms done), then each runs at half
// speed: r0 ends at 15 (latency 15), r1 has 5 ms done then and runs
// alone to 16 (6 done); r2 arrives at 16 and shares the core with r1;
// r3 at 17 finds one beyond the core already and fails at once; r1 ends
// at 24 (4 more at half speed; latency 19 > 16: dropped), r2, with 4 done
// then, runs alone and ends at 30 (latency 14).
func TestSharedCase(t *testing.T) {
	l := &logger{limit: 3}
	r, err := Run(Config{
		Workers: 1, Shared: true, MeanService: 10 * time.Millisecond, Sigma: -1, SLOFactor: 1.6,
		Duration: 40 * time.Millisecond, Bin: 10 * time.Millisecond, MaxQueue: 1,
		Arrivals: []time.Duration{0, 5 * time.Millisecond, 16 * time.Millisecond, 17 * time.Millisecond},
	}, func(*Env) (Controller, error) { return l, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := []done{
		{0, 15 * ms, 15 * time.Millisecond, false},
		{3, 17 * ms, 0, true},
		{1, 24 * ms, 19 * time.Millisecond, true},
		{2, 30 * ms, 14 * time.Millisecond, false},
	}
	if !reflect.DeepEqual(l.done, want) {
		t.Errorf("done %+v,\nwant %+v", l.done, want)
	}
	for _, b := range r.Bins {
		if b.Capacity != 1 { // 1 core × 10 ms / 10 ms, however many share it
			t.Errorf("bin at %v: capacity %v, want 1", b.Start, b.Capacity)
		}
	}
}

// TestSharedQueueingLaw: one shared core with no protection is an
// M/G/1 processor-sharing queue, whose mean latency is S / (1 − ρ)
// whatever the service time's distribution: 10 ms at half load for a
// mean service of 5 ms; a quarter of that above S at ρ = 0.2.
func TestSharedQueueingLaw(t *testing.T) {
	for _, load := range []float64{0.2, 0.5} {
		c := small(3, 200*time.Second, Step{0, load})
		c.Workers, c.Shared = 1, true
		r, err := Run(c, NewUnprotected)
		if err != nil {
			t.Fatal(err)
		}
		var sum, n int64
		for _, b := range r.Bins {
			for _, l := range b.lat {
				sum, n = sum+l, n+1
			}
		}
		mean, want := float64(sum)/float64(n)/1e6, 5/(1-load)
		t.Logf("load %v: %d requests, mean latency %.3f ms (want %.3f)", load, n, mean, want)
		if math.Abs(mean/want-1) > 0.03 {
			t.Errorf("load %v: mean latency %.3f ms, want %.3f within 3 %%", load, mean, want)
		}
	}
}
