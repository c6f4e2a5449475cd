package overloadsim

import (
	"math"
	"slices"
	"time"
)

// envoy is Envoy's adaptive concurrency gradient controller
// (source/extensions/filters/http/adaptive_concurrency/controller/
// gradient_controller.cc), with the proto defaults (buffer 25 %, maximum
// 1000, minimum concurrency 3, minRTT over 50 requests, jitter 15 %, p50
// samples) and the documentation's example intervals (limit update every
// 100 ms, minRTT every 60 s). Its timers run lazily: each call first fires
// those due, in order, which is exact, since only calls change its state.
//
// Simplified: the percentile is exact over the window's samples, where
// Envoy's histogram approximates it.
type envoy struct {
	env                     *Env
	limit, deferred         float64
	inflight, consecutive   int
	minRTT, sampleRTT       float64 // µs
	hist                    []float64
	epoch                   int64
	nextReset, nextMinRTT   int64 // -1: not armed
	update, interval        int64
	minC, maxC, buffer, pct float64
}

// NewEnvoy starts, as Envoy does, in a minRTT probe at the minimum limit.
func NewEnvoy(env *Env) (Controller, error) {
	e := &envoy{env: env, limit: 3, minC: 3, maxC: 1000, buffer: 0.25, pct: 0.5,
		update: int64(100 * time.Millisecond), interval: int64(60 * time.Second), nextMinRTT: -1}
	e.enterProbe(0)
	e.nextReset = e.update
	return e, nil
}

func (e *envoy) probing() bool { return e.deferred > 0 }

func (e *envoy) enterProbe(now int64) {
	if e.probing() {
		return
	}
	e.deferred = e.limit
	e.setLimit(e.minC, now)
	e.hist = e.hist[:0]
	e.epoch = now
}

// fire runs the timers due by now, earliest first.
func (e *envoy) fire(now int64) {
	for {
		reset := e.nextReset >= 0 && e.nextReset <= now
		probe := e.nextMinRTT >= 0 && e.nextMinRTT <= now
		switch {
		case probe && (!reset || e.nextMinRTT <= e.nextReset):
			t := e.nextMinRTT
			e.nextMinRTT = -1
			e.enterProbe(t)
		case reset:
			t := e.nextReset
			if e.probing() {
				// Envoy gives up the timer during a probe; the probe's
				// end arms it again.
				e.nextReset = -1
				continue
			}
			if len(e.hist) > 0 {
				e.sampleRTT = e.quantile()
				e.setLimit(e.newLimit(), t)
			}
			e.nextReset = t + e.update
		default:
			return
		}
	}
}

func (e *envoy) quantile() float64 {
	slices.Sort(e.hist)
	q := e.hist[int(math.Ceil(e.pct*float64(len(e.hist))))-1]
	e.hist = e.hist[:0]
	return q
}

func (e *envoy) newLimit() float64 {
	g := math.Max(0.5, math.Min(2, (e.minRTT+e.minRTT*e.buffer)/e.sampleRTT))
	l := e.limit * g
	return math.Max(e.minC, math.Min(e.maxC, math.Floor(l+math.Sqrt(l))))
}

func (e *envoy) setLimit(l float64, now int64) {
	old := e.limit
	e.limit = l
	if !e.probing() && old == e.minC && l == e.minC {
		e.consecutive++
	} else {
		e.consecutive = 0
	}
	// Five windows in a row at the minimum: the minRTT may be wrong,
	// measure it again now.
	if e.consecutive >= 5 {
		e.nextMinRTT = now
	}
}

func (e *envoy) Admit(now int64, r *Request) bool {
	e.fire(now)
	if float64(e.inflight) >= e.limit {
		return false
	}
	e.inflight++
	return true
}

func (e *envoy) Done(now int64, r *Request, latency time.Duration, _ bool) {
	e.fire(now)
	e.inflight--
	if r.Arrival < e.epoch {
		return // started before the probe: not a minRTT sample
	}
	e.hist = append(e.hist, float64(latency/time.Microsecond))
	if e.probing() && len(e.hist) >= 50 {
		e.minRTT = e.quantile()
		e.setLimit(e.deferred, now)
		e.deferred = 0
		jitter := int64(math.Ceil(float64(e.interval/int64(time.Millisecond)) * 0.15))
		e.nextMinRTT = now + e.interval + e.env.Rand.Int64N(jitter)*int64(time.Millisecond)
		e.nextReset = now + e.update
	}
}

func (e *envoy) Limit(now int64) float64 {
	e.fire(now)
	return e.limit
}
