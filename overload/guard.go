package overload

import (
	"time"

	"github.com/floodgate/floodgate/core"
)

// Guard is an overload guard whose state metrics read, at each scrape
// (promobs.WithGuard): [Adaptive] and [BBR] are guards.
type Guard interface {
	core.Limiter
	// Reading returns the guard's state now.
	Reading() Reading
}

// Reading is an overload guard's state at one instant: what a dashboard
// shows beside the requests it shed.
type Reading struct {
	// Limit is the bound on requests in flight that applies now, for
	// Normal priority; 0 while none applies (BBR below its CPU threshold
	// and past its cool-off).
	Limit int
	// InFlight is the units admitted and not yet ended.
	InFlight int
	// Latency is the latency the guard judges the service by: Adaptive's
	// baseline (the service's latency without a queue), BBR's least
	// mean latency of a bucket; 0 before it measured any.
	Latency time.Duration
}

var (
	_ Guard = (*Adaptive)(nil)
	_ Guard = (*BBR)(nil)
)

// Reading returns the limit, the requests in flight and the baseline
// latency (see Stats for more).
func (a *Adaptive) Reading() Reading {
	s := a.Stats()
	return Reading{Limit: s.Limit, InFlight: s.InFlight, Latency: s.Baseline}
}

// Reading returns the bound while it applies, the units in flight and the
// least bucket latency (see Stats for more).
func (b *BBR) Reading() Reading {
	s := b.Stats()
	r := Reading{InFlight: s.InFlight, Latency: s.MinLatency}
	if s.Shedding {
		r.Limit = s.Limit
	}
	return r
}
