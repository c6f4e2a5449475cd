package overloadsim

import (
	"math"
	"time"
)

// netflix is the limiter around Netflix's limits (concurrency-limits-core
// SimpleLimiter and AbstractLimiter, HEAD 78a74b9): admit while in flight
// < int(limit); each completion, successful or dropped, updates the limit
// with its RTT and the in-flight count at its admission.
type netflix struct {
	inflight int
	limit    float64
	update   func(rtt float64, inflight int, dropped bool) float64
}

func (n *netflix) Admit(_ int64, r *Request) bool {
	if n.inflight >= int(n.limit) {
		return false
	}
	n.inflight++
	r.Tag = int64(n.inflight)
	return true
}

func (n *netflix) Done(_ int64, r *Request, latency time.Duration, dropped bool) {
	n.inflight--
	n.limit = n.update(float64(latency), int(r.Tag), dropped)
}

func (n *netflix) Limit(int64) float64 { return float64(int(n.limit)) }

// NewGradient2 is Netflix's Gradient2Limit (limit/Gradient2Limit.java)
// with its defaults: initial and minimum limit 20, maximum 200, smoothing
// 0.2, queue size 4, tolerance 1.5, long window 600 samples (a plain mean
// for the first 10). It ignores drops, as the source does.
func NewGradient2(*Env) (Controller, error) {
	g := &gradient2{limit: 20, longN: 600, warmup: 10}
	return &netflix{limit: 20, update: g.update}, nil
}

type gradient2 struct {
	limit, long, sum float64
	n, longN, warmup int
}

func (g *gradient2) update(rtt float64, inflight int, _ bool) float64 {
	// The long RTT: a mean of the first samples, then an exponential
	// average over longN.
	if g.n < g.warmup {
		g.n++
		g.sum += rtt
		g.long = g.sum / float64(g.n)
	} else {
		f := 2 / float64(g.longN+1)
		g.long = g.long*(1-f) + rtt*f
	}
	// After a long overload the long RTT is far above the short one:
	// decay it faster.
	if g.long/rtt > 2 {
		g.long *= 0.95
	}
	if float64(inflight) < g.limit/2 {
		return g.limit // app-limited: no growth
	}
	grad := math.Max(0.5, math.Min(1, 1.5*g.long/rtt))
	next := g.limit*grad + 4
	next = g.limit*0.8 + next*0.2
	g.limit = math.Max(20, math.Min(200, next))
	return g.limit
}

// NewVegas is Netflix's VegasLimit (limit/VegasLimit.java), its default
// Limit, with its defaults: initial limit 20, maximum 1000, smoothing 1,
// λ = max(1, ⌊log10 L⌋), threshold λ, α 3λ, β 6λ, probe multiplier 30.
// The no-load RTT is the lowest seen, reset to the current sample every
// U(0.5, 1)·30·L samples (env.Rand draws the jitter).
func NewVegas(env *Env) (Controller, error) {
	v := &vegas{limit: 20, rng: env.Rand.Float64}
	v.jitter = 0.5 + 0.5*v.rng()
	return &netflix{limit: 20, update: v.update}, nil
}

type vegas struct {
	limit, noLoad, jitter float64
	probes                int
	rng                   func() float64
}

func log10Int(l float64) float64 { return math.Max(1, math.Floor(math.Log10(math.Floor(l)))) }

func (v *vegas) update(rtt float64, inflight int, dropped bool) float64 {
	v.probes++
	if v.jitter*30*v.limit <= float64(v.probes) {
		v.jitter, v.probes, v.noLoad = 0.5+0.5*v.rng(), 0, rtt
		return v.limit
	}
	if v.noLoad == 0 || rtt < v.noLoad {
		v.noLoad = rtt
		return v.limit
	}
	lambda := log10Int(v.limit)
	q := math.Ceil(v.limit * (1 - v.noLoad/rtt))
	next := v.limit
	switch {
	case dropped:
		next -= lambda
	case float64(inflight)*2 < v.limit:
		return v.limit // app-limited
	case q <= lambda:
		next += 6 * lambda
	case q < 3*lambda:
		next += lambda
	case q > 6*lambda:
		next -= lambda
	default:
		return v.limit
	}
	v.limit = math.Max(1, math.Min(1000, next))
	return v.limit
}

// NewAIMD is Netflix's AIMDLimit (limit/AIMDLimit.java) with its
// defaults: L from 20 in [20, 200]; on a drop (here: a missed deadline)
// or an RTT over 5 s, L = int(0.9 L); else, with at least L/2 in flight
// at admission, L + 1.
func NewAIMD(*Env) (Controller, error) {
	a := &aimd{limit: 20}
	return &netflix{limit: 20, update: a.update}, nil
}

type aimd struct{ limit int }

func (a *aimd) update(rtt float64, inflight int, dropped bool) float64 {
	switch {
	case dropped || rtt > float64(5*time.Second):
		a.limit = int(float64(a.limit) * 0.9)
	case inflight*2 >= a.limit:
		a.limit++
	}
	a.limit = min(200, max(20, a.limit))
	return float64(a.limit)
}
