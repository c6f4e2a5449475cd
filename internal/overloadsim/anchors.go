package overloadsim

import (
	"math"
	"time"
)

// Anchors returns every anchor of issue 33, in the tables' order: no
// protection, a static limit of the workers, and each project's adaptive
// rule written out from its source with its defaults (Netflix's three:
// Gradient2, Vegas and AIMD, and its priority partitions around
// Gradient2).
func Anchors() []Anchor {
	return []Anchor{
		{Name: "none", Rule: "admit everything", New: NewUnprotected},
		{Name: "static N", Rule: "admit while in flight < workers at start", New: NewStatic},
		{Name: "Gradient2", Rule: "L = 0.8L + 0.2(clamp(1.5 long/short, 0.5, 1)L + 4), per sample", New: NewGradient2},
		{Name: "Vegas", Rule: "q = ceil(L(1 - noLoad/rtt)); +6λ/+λ/-λ per sample, probe every U(.5,1)·30L", New: NewVegas},
		{Name: "AIMD", Rule: "per sample: L = int(0.9L) on a drop (a missed deadline), else L+1 with ≥ L/2 in flight; [20, 200]", New: NewAIMD},
		{Name: "G2 partitions", Rule: "Gradient2; over L, Critical admitted while under ceil(0.9L) of its own, Normal under ceil(0.1L)", New: NewPartitions},
		{Name: "Envoy gradient", Rule: "p50 per 100 ms; L = gL + sqrt(gL), g = clamp(1.25 minRTT/p50, .5, 2); minRTT probe pins L to 3", New: NewEnvoy},
		{Name: "aegis BBR", Rule: "cpu ≥ 800‰ (EMA .95/500 ms) or ≤ 1 s since: shed if inflight > maxPass·minRT", New: NewBBR},
		{Name: "failsafe", Rule: "per ≥1 s window: p90 → median(5) → avg(5) vs avg(10); ±1 on queue and correlations", New: NewFailsafe},
	}
}

// unprotected admits everything.
type unprotected struct{}

// NewUnprotected is no protection: every request reaches the server.
func NewUnprotected(*Env) (Controller, error) { return unprotected{}, nil }

func (unprotected) Admit(int64, *Request) bool                { return true }
func (unprotected) Done(int64, *Request, time.Duration, bool) {}
func (unprotected) Limit(int64) float64                       { return math.Inf(1) }

// static is a fixed concurrency limit.
type static struct{ limit, inflight int }

// NewStatic is a static concurrency limit equal to the workers at the
// start of the run: the best fixed limit for the server as it starts, and
// too high once it loses workers.
func NewStatic(env *Env) (Controller, error) { return &static{limit: env.Workers}, nil }

func (s *static) Admit(int64, *Request) bool {
	if s.inflight >= s.limit {
		return false
	}
	s.inflight++
	return true
}

func (s *static) Done(int64, *Request, time.Duration, bool) { s.inflight-- }
func (s *static) Limit(int64) float64                       { return float64(s.limit) }
