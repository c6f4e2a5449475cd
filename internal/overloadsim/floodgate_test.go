package overloadsim

import (
	"math"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// floodgateAdaptive is overload.Adaptive through the bridge, with its
// defaults; requests keyed by tenant, so that its tenant shares apply.
func floodgateAdaptive() Factory {
	var a *overload.Adaptive
	return Bridge{
		New: func(clock core.Clock, _ *Env) (core.Limiter, error) {
			var err error
			a, err = overload.NewAdaptive(overload.AdaptiveConfig{Clock: clock})
			return a, err
		},
		Limit: func() float64 { return float64(a.Stats().Limit) },
	}.Factory()
}

// floodgateBBR is overload.BBR through the bridge, its CPU signal the
// server's busy share read as overload.CPU reads a process's: sampled
// every 250 ms and smoothed with a 400 ms time constant (CPUConfig's
// defaults), on the run's clock.
func floodgateBBR() Factory {
	var b *overload.BBR
	return Bridge{
		New: func(clock core.Clock, env *Env) (core.Limiter, error) {
			var err error
			b, err = overload.NewBBR(overload.BBRConfig{Clock: clock, CPU: sampledCPU(clock, env.CPU())})
			return b, err
		},
		Key: func(*Request) string { return "" },
		Limit: func() float64 {
			if s := b.Stats(); s.Shedding {
				return float64(s.Limit)
			}
			return math.Inf(1)
		},
	}.Factory()
}

// sampledCPU is read, sampled every 250 ms of clock and smoothed as
// overload.CPU smooths (each sample keeps e^(-dt/400ms) of the reading).
func sampledCPU(clock core.Clock, read func() float64) func() float64 {
	const every, tau = int64(250 * time.Millisecond), float64(400 * time.Millisecond)
	last, v := int64(0), 0.0
	return func() float64 {
		now := clock.Now()
		if last == 0 {
			last = now
			return v
		}
		if dt := now - last; dt >= every {
			keep := math.Exp(-float64(dt) / tau)
			v = keep*v + (1-keep)*read()
			last = now
		}
		return v
	}
}
