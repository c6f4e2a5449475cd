package overloadsim

import (
	"math/rand/v2"
	"time"

	"github.com/floodgate/floodgate/overload"
)

// Request is one request of a run, as a controller sees it.
type Request struct {
	// ID numbers the requests in order of arrival, from 0.
	ID int64
	// Arrival is the virtual time it arrived, in nanoseconds from the
	// start of the run.
	Arrival  int64
	Priority overload.Priority
	// Tenant is the key of the tenant that sent it ("t0", "t1", ...).
	Tenant string
	// Tag is the controller's: what Admit writes here, Done reads back
	// (the in-flight count at admission, a slot).
	Tag int64
}

// Controller decides admissions for the simulated server, as an overload
// guard in front of it would. The simulator calls it from one goroutine,
// in order of virtual time; a *Request is valid only during the call. A
// controller that can fail (Bridge's) has a method Err() error, and Run
// returns its error at the end.
type Controller interface {
	// Admit reports whether r, arriving at now, is admitted; a refused
	// request is shed and never reaches the server.
	Admit(now int64, r *Request) bool
	// Done tells the controller that r ended at now, latency after its
	// arrival; dropped is true when it missed its deadline (Config.SLO)
	// or found the server's queue full.
	Done(now int64, r *Request, latency time.Duration, dropped bool)
	// Limit returns the controller's current concurrency limit, for
	// tracking (+Inf when it has none).
	Limit(now int64) float64
}

// Ticker is implemented by controllers that need a timer: the simulator
// calls Tick at every multiple of Every, between the events of the run.
type Ticker interface {
	Every() time.Duration
	Tick(now int64)
}

// Env is what a controller may know of the server: its size at the start,
// a seeded source for the controller's own draws, and the work done so
// far (the simulation's CPU signal).
type Env struct {
	// Workers is the number of workers at the start of the run.
	Workers int
	// Rand is the controller's own seeded source (jitter, probes).
	Rand *rand.Rand
	s    *sim
}

// Work returns the worker-nanoseconds spent busy and available since the
// start of the run, up to the current event: their differences between
// two ticks are the CPU use over that interval.
func (e *Env) Work() (busy, available int64) { return e.s.busyNs, e.s.availNs }

// CPU returns a reader of the server's CPU use, the simulation's
// counterpart of a process's: each call returns the share of the
// available worker time spent busy since the reader's previous call (or
// the start of the run), from 0 to 1, as of the current event; called
// again at the same instant, the share busy at that instant.
func (e *Env) CPU() func() float64 {
	var lastBusy, lastAvail int64
	return func() float64 {
		busy, avail := e.Work()
		if avail == lastAvail {
			return float64(e.s.busy) / float64(max(e.s.workers, e.s.busy))
		}
		share := float64(busy-lastBusy) / float64(avail-lastAvail)
		lastBusy, lastAvail = busy, avail
		return share
	}
}

// Factory makes a controller for one run.
type Factory func(env *Env) (Controller, error)

// Anchor is one way of deciding, named in the result tables.
type Anchor struct {
	Name string
	// Rule states the anchor's rule in a line, for the tables.
	Rule string
	New  Factory
}
