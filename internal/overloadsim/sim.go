package overloadsim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// The streams of draws, each its own seeded source, so that every
// controller sees the same requests (arrivals, service times, classes and
// tenants), whatever it admits.
const (
	streamArrivals = iota + 1
	streamService
	streamAttributes
	streamController
)

// sim is one run: a server of workers in front of a FIFO queue, or of
// cores shared by the requests in flight (Config.Shared), driven by
// events on a virtual clock in nanoseconds.
type sim struct {
	cfg  Config
	ctrl Controller
	res  *Result
	cur  Request // the request the controller is told of

	workers, busy          int
	busyNs, availNs, lastT int64
	binNs, slo             int64
	binAvail               int64 // availNs at the start of the current bin
	q                      fifo
	run                    running
	arr                    arrivals
	svc, attr              *rand.Rand
	mu, sigma              float64
	classCum, tenantCum    []float64
	tenantKeys             []string
	nextID                 int64
	resized                int
	tick                   Ticker
	tickEvery, nextTick    int64
	nextBin, end           int64
	// served is, when shared, the service each request in flight has
	// had since the start of the run, ns: they all get the same, so a
	// job's finish is the served it ends at, and the heap's order holds.
	served float64
}

// Run simulates cfg with the controller f makes. The same cfg and f give
// the same Result, bit for bit.
func Run(cfg Config, f Factory) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, workers: cfg.Workers, binNs: int64(cfg.Bin), slo: int64(cfg.SLO()), end: int64(cfg.Duration)}
	s.svc = rand.New(rand.NewPCG(cfg.Seed, streamService))
	s.mu, s.sigma = cfg.mu(), cfg.sigma()
	s.attr = rand.New(rand.NewPCG(cfg.Seed, streamAttributes))
	s.classCum, s.tenantCum = cumulative(weights(cfg.Classes)), cumulative(cfg.Tenants)
	for i := range cfg.Tenants {
		s.tenantKeys = append(s.tenantKeys, "t"+strconv.Itoa(i))
	}
	s.res = newResult(cfg)
	env := &Env{Workers: cfg.Workers, Rand: rand.New(rand.NewPCG(cfg.Seed, streamController)), s: s}
	ctrl, err := f(env)
	if err != nil {
		return nil, err
	}
	s.ctrl = ctrl
	if t, ok := ctrl.(Ticker); ok && t.Every() > 0 {
		s.tick, s.tickEvery, s.nextTick = t, int64(t.Every()), int64(t.Every())
	}
	s.arr = arrivals{rng: rand.New(rand.NewPCG(cfg.Seed, streamArrivals)), steps: cfg.Load, trace: cfg.Arrivals, traced: len(cfg.Arrivals) > 0, capacity: cfg.Capacity()}
	s.arr.advance()
	s.nextBin = s.binNs
	s.loop()
	if e, ok := ctrl.(interface{ Err() error }); ok {
		if err := e.Err(); err != nil {
			return nil, err
		}
	}
	return s.res, nil
}

// The kinds of event; at one instant they happen in this order.
const (
	evEnd = iota
	evDone
	evResize
	evTick
	evBin
	evArrive
)

func (s *sim) loop() {
	for {
		t, kind := s.end, evEnd
		if f := s.nextDone(); f < t {
			t, kind = f, evDone
		}
		if s.resized < len(s.cfg.Resizes) && int64(s.cfg.Resizes[s.resized].At) < t {
			t, kind = int64(s.cfg.Resizes[s.resized].At), evResize
		}
		if s.tick != nil && s.nextTick < t {
			t, kind = s.nextTick, evTick
		}
		if s.nextBin < t {
			t, kind = s.nextBin, evBin
		}
		if s.arr.next < t {
			t, kind = s.arr.next, evArrive
		}
		s.account(t)
		switch kind {
		case evEnd:
			s.closeBin(t)
			return
		case evDone:
			s.complete(t)
		case evResize:
			s.workers = s.cfg.Resizes[s.resized].Workers
			s.resized++
			s.startQueued(t)
		case evTick:
			s.tick.Tick(t)
			s.nextTick += s.tickEvery
		case evBin:
			s.closeBin(t)
			s.nextBin += s.binNs
		case evArrive:
			s.arrive(t)
			s.arr.advance()
		}
	}
}

// account integrates the work done up to t: busy worker-nanoseconds, and
// available ones (workers removed while busy count until they finish;
// shared cores are busy while anything is in flight, however much).
func (s *sim) account(t int64) {
	dt := t - s.lastT
	if s.cfg.Shared {
		s.served += float64(dt) * s.speed()
		s.busyNs += int64(min(s.busy, s.workers)) * dt
		s.availNs += int64(s.workers) * dt
	} else {
		s.busyNs += int64(s.busy) * dt
		s.availNs += int64(max(s.workers, s.busy)) * dt
	}
	s.lastT = t
}

func (s *sim) arrive(t int64) {
	j := job{service: max(1, int64(math.Round(math.Exp(s.mu+s.sigma*s.svc.NormFloat64()))))}
	j.class, j.tenant = int32(pick(s.classCum, s.attr.Float64())), int32(pick(s.tenantCum, s.attr.Float64()))
	j.req = Request{ID: s.nextID, Arrival: t, Priority: s.cfg.Classes[j.class].Priority, Tenant: s.tenantKeys[j.tenant]}
	s.nextID++
	b := &s.res.Bins[t/s.binNs]
	c := &b.Classes[j.class]
	b.Arrived++
	c.Arrived++
	c.TenantArrived[j.tenant]++
	// The controller sees the request through s.cur, so that no job
	// escapes to the heap.
	s.cur = j.req
	admitted := s.ctrl.Admit(t, &s.cur)
	j.req.Tag = s.cur.Tag
	if !admitted {
		b.Shed++
		c.Shed++
		return
	}
	b.Admitted++
	c.Admitted++
	switch {
	case s.busy < s.workers || s.cfg.Shared && (s.cfg.MaxQueue == 0 || s.busy-s.workers < s.cfg.MaxQueue):
		s.start(j, t)
	case s.cfg.Shared || s.cfg.MaxQueue > 0 && s.q.size >= s.cfg.MaxQueue:
		b.Overflow++
		s.ctrl.Done(t, &s.cur, 0, true)
	default:
		s.q.push(j)
	}
}

func (s *sim) start(j job, t int64) {
	j.finish = t + j.service
	if s.cfg.Shared {
		j.finish = int64(math.Ceil(s.served)) + j.service
	}
	s.run.push(j)
	s.busy++
}

func (s *sim) startQueued(t int64) {
	for s.busy < s.workers && s.q.size > 0 {
		s.start(s.q.pop(), t)
	}
}

func (s *sim) complete(t int64) {
	j := s.run.pop()
	s.busy--
	lat := t - j.req.Arrival
	good := lat <= s.slo
	s.cur = j.req
	s.ctrl.Done(t, &s.cur, time.Duration(lat), !good)
	b := &s.res.Bins[t/s.binNs]
	b.Completed++
	b.lat = append(b.lat, lat)
	if good {
		b.Good++
		c := &s.res.Bins[j.req.Arrival/s.binNs].Classes[j.class]
		c.Good++
		c.TenantGood[j.tenant]++
	}
	s.startQueued(t)
}

// arrivals is an open-loop Poisson stream whose rate follows the steps.
type arrivals struct {
	rng      *rand.Rand
	steps    []Step
	trace    []time.Duration // Config.Arrivals, not yet arrived
	traced   bool            // Config.Arrivals replace the stream
	capacity float64         // requests per second at load 1
	i        int
	t, next  int64
}

// advance draws the next arrival after the last; a draw that crosses a
// step is thrown away and drawn again from the step (the stream has no
// memory, so this is exact).
func (a *arrivals) advance() {
	if a.traced {
		a.next = math.MaxInt64
		if len(a.trace) > 0 {
			a.next, a.trace = int64(a.trace[0]), a.trace[1:]
		}
		return
	}
	for {
		boundary := int64(math.MaxInt64)
		if a.i+1 < len(a.steps) {
			boundary = int64(a.steps[a.i+1].At)
		}
		if rate := a.steps[a.i].Load * a.capacity; rate > 0 {
			if dt := a.rng.ExpFloat64() / rate * 1e9; dt < float64(boundary-a.t) {
				a.t += int64(dt)
				a.next = a.t
				return
			}
		}
		if boundary == math.MaxInt64 {
			a.next = math.MaxInt64
			return
		}
		a.t, a.i = boundary, a.i+1
	}
}

func cumulative(w []float64) []float64 {
	c, sum := make([]float64, len(w)), 0.0
	for i, x := range w {
		sum += x
		c[i] = sum
	}
	for i := range c {
		c[i] /= sum
	}
	return c
}

// pick returns the index whose cumulative share u falls in.
func pick(cum []float64, u float64) int {
	for i, c := range cum {
		if u < c {
			return i
		}
	}
	return len(cum) - 1
}
