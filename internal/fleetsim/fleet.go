package fleetsim

import (
	"math/rand/v2"
	"time"
)

// Admission is one admitted request as its instance logged it: when it
// was let through and when the unit it spent was charged to the global
// state (for AsyncHits, which charges nothing first, the same instant).
type Admission struct {
	At, ChargedAt time.Duration
	Instance      int
}

// Result is what one run logged.
type Result struct {
	Config     Config
	Admissions []Admission // in the order they happened
	Requests   int         // decisions made, admitted or refused
	Calls      int         // messages to a store or grantor: lease asks, refunds, hit syncs, single decisions
	CrossCalls int         // those that crossed regions
	Demand     []int       // requests offered per Period
	// Lost is the units a killed instance held and never spent (none
	// are ever returned). KilledAt is when it was killed, KillLeaseEnd
	// the latest end of the leases it held or had asked for, HolderUntil
	// when its grantor stopped counting it as a holder.
	Lost                                int
	KilledAt, KillLeaseEnd, HolderUntil time.Duration
	latencies                           []time.Duration
}

// fleet is one run's world: the clock, the traffic and the strategy.
type fleet struct {
	clock
	cfg     Config
	rng     *rand.Rand
	res     *Result
	phase   int
	dead    []bool
	gen     []uint64
	request func(inst int) // the strategy's handler for an arriving request
}

// Run simulates cfg and returns its log. The same Config gives the same
// Result.
func Run(cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := cfg.Regions * cfg.Instances
	f := &fleet{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, 0x666c656574)),
		res:  &Result{Config: cfg, Demand: make([]int, int((cfg.Duration+cfg.Limit.Period-1)/cfg.Limit.Period))},
		dead: make([]bool, n),
		gen:  make([]uint64, n),
	}
	switch cfg.Strategy {
	case GlobalStore:
		f.request = newExact(f).request
	case AsyncHits:
		f.request = newAsync(f).request
	default:
		f.request = newLeases(f).request
	}
	for i, p := range cfg.Phases {
		f.at(p.Start, func() { f.phase = i; f.rearm() })
	}
	f.run(cfg.Duration)
	return f.res, nil
}

func (f *fleet) regionOf(inst int) int { return inst / f.cfg.Instances }

// delay is the one-way delay between two regions.
func (f *fleet) delay(from, to int) time.Duration {
	if from == to {
		return f.cfg.Local
	}
	return f.cfg.Remote
}

// call counts one message of one-way delay d.
func (f *fleet) call(d time.Duration) {
	f.res.Calls++
	if d >= f.cfg.Remote {
		f.res.CrossCalls++
	}
}

func (f *fleet) admit(inst int, chargedAt, latency time.Duration) {
	f.res.Admissions = append(f.res.Admissions, Admission{At: f.now, ChargedAt: chargedAt, Instance: inst})
	f.res.latencies = append(f.res.latencies, latency)
}

func (f *fleet) refuse(latency time.Duration) {
	f.res.latencies = append(f.res.latencies, latency)
}

// rateOf is instance inst's share of its region's current rate.
func (f *fleet) rateOf(inst int) float64 {
	if f.dead[inst] {
		return 0
	}
	r := f.regionOf(inst)
	live := 0
	for i := r * f.cfg.Instances; i < (r+1)*f.cfg.Instances; i++ {
		if !f.dead[i] {
			live++
		}
	}
	return f.cfg.Phases[f.phase].Rates[r] / float64(live)
}

// rearm redraws every instance's next arrival after the rates changed;
// the stream is Poisson, so drawing afresh is exact.
func (f *fleet) rearm() {
	for i := range f.gen {
		f.gen[i]++
		f.next(i)
	}
}

func (f *fleet) next(inst int) {
	r := f.rateOf(inst)
	if r <= 0 {
		return
	}
	g := f.gen[inst]
	f.after(time.Duration(f.rng.ExpFloat64()/r*float64(time.Second)), func() {
		if f.gen[inst] != g {
			return
		}
		f.res.Requests++
		if w := int(f.now / f.cfg.Limit.Period); w < len(f.res.Demand) {
			f.res.Demand[w]++
		}
		f.request(inst)
		f.next(inst)
	})
}
