package overloadsim

import (
	"math"
	"slices"
	"time"
)

// failsafe is failsafe-go's adaptive limiter (adaptivelimiter/
// adaptivelimiter.go, internal/util, HEAD 5759a5e) with its defaults:
// limits 1 to 200 from 20, max-limit factor 5 (no decay, no stabilisation
// window), recent window from 1 s to 30 s of at least 50 samples, p90,
// baseline age 10, correlation window 50, 10 warm-up samples; no queue, no
// prioritizer.
//
// Simplified: the p90 is exact, where failsafe-go's t-digest approximates it.
type failsafe struct {
	limit              float64
	used               int
	samples            []float64 // recent RTTs, ns
	minRTT             float64
	maxInflight        int
	median             movingMedian
	smoothed, baseline movingAverage
	nextUpdate         int64
	thrCorr, rttCorr   correlation
}

// NewFailsafe returns failsafe-go's adaptive limiter.
func NewFailsafe(*Env) (Controller, error) {
	return &failsafe{
		limit:    20,
		smoothed: movingAverage{factor: 2.0 / 6, warmup: 10},
		baseline: movingAverage{factor: 2.0 / 11, warmup: 10},
		thrCorr:  correlation{x: movingSum{v: make([]float64, 50)}, y: movingSum{v: make([]float64, 50)}},
		rttCorr:  correlation{x: movingSum{v: make([]float64, 50)}, y: movingSum{v: make([]float64, 50)}},
	}, nil
}

func (f *failsafe) Admit(_ int64, r *Request) bool {
	if f.used >= int(f.limit) {
		return false
	}
	f.used++
	r.Tag = int64(f.used)
	return true
}

func (f *failsafe) Done(now int64, r *Request, latency time.Duration, dropped bool) {
	rtt := float64(latency)
	if !dropped {
		if len(f.samples) == 0 || rtt < f.minRTT {
			f.minRTT = rtt
		}
		f.maxInflight = max(f.maxInflight, int(r.Tag))
		f.samples = append(f.samples, rtt)
	}
	if now > f.nextUpdate && len(f.samples) >= 50 {
		slices.Sort(f.samples)
		q := f.samples[int(math.Ceil(0.9*float64(len(f.samples))))-1]
		f.update(f.smoothed.add(f.median.add(q)), f.maxInflight)
		window := min(max(2*f.minRTT, float64(time.Second)), float64(30*time.Second))
		f.samples, f.maxInflight = f.samples[:0], 0
		f.nextUpdate = now + int64(window)
	}
	f.used-- // failsafe-go releases after the update: the limiter may look full
}

func failsafeLog10(l float64) float64 {
	switch i := int(l); {
	case i < 100:
		return 1
	case i < 1000:
		return 2
	default:
		return math.Floor(math.Log10(float64(i)))
	}
}

func (f *failsafe) update(recent float64, inflight int) {
	baseline := f.baseline.add(recent)
	queue := math.Ceil(f.limit * (1 - baseline/recent))
	throughput := float64(inflight) / (recent / 1e9)
	thrCorr, thrCV := f.thrCorr.add(float64(inflight), throughput)
	rttCorr, _ := f.rttCorr.add(float64(inflight), recent)
	full := f.used >= int(f.limit)
	lambda := failsafeLog10(f.limit)
	next := f.limit
	switch {
	case queue > 6*lambda,
		full && thrCorr < 0,
		full && thrCorr < 0.3 && rttCorr > 0.5,
		full && thrCV < 0.2 && rttCorr > 0.5:
		next -= lambda
	case queue < 3*lambda:
		next += lambda
	}
	// The limit stays within 5 × the window's most in flight.
	if ceiling := float64(inflight) * 5; next > ceiling {
		switch {
		case f.limit > ceiling:
			next = f.limit - lambda
		default:
			next = ceiling
		}
	}
	f.limit = math.Max(1, math.Min(200, next))
}

func (f *failsafe) Limit(int64) float64 { return float64(int(f.limit)) }

// movingAverage is failsafe-go's: a plain mean for the first warmup
// values, then exponential smoothing.
type movingAverage struct {
	factor, value, sum float64
	n, warmup          int
}

func (a *movingAverage) add(v float64) float64 {
	if a.n < a.warmup {
		a.n++
		a.sum += v
		a.value = a.sum / float64(a.n)
	} else {
		a.value = a.value*(1-a.factor) + v*a.factor
	}
	return a.value
}

// movingMedian is failsafe-go's median of the last 5 values, which
// passes values through until it has 4.
type movingMedian struct {
	v    [5]float64
	i, n int
}

func (m *movingMedian) add(v float64) float64 {
	m.v[m.i] = v
	m.i = (m.i + 1) % len(m.v)
	if m.n < len(m.v)-1 {
		m.n++
		return v
	}
	s := m.v
	slices.Sort(s[:])
	return s[len(s)/2]
}

// movingSum is failsafe-go's window of samples (it skips zeros).
type movingSum struct {
	v            []float64
	n, i         int
	sum, squares float64
}

func (s *movingSum) add(x float64) (old float64, full bool) {
	if x == 0 {
		return 0, false
	}
	if s.n == len(s.v) {
		full, old = true, s.v[s.i]
		s.sum -= old
		s.squares -= old * old
	} else {
		s.n++
	}
	s.v[s.i] = x
	s.sum += x
	s.squares += x * x
	s.i = (s.i + 1) % len(s.v)
	return old, full
}

func (s *movingSum) stats() (cv, mean, variance float64, ok bool) {
	if s.n < 2 {
		return 0, 0, 0, false
	}
	mean = s.sum / float64(s.n)
	variance = s.squares/float64(s.n) - mean*mean
	if variance < 0 || mean == 0 {
		return 0, 0, 0, false
	}
	return math.Sqrt(variance) / mean, mean, variance, true
}

// correlation is failsafe-go's CorrelationWindow: Pearson's correlation
// of the last 50 pairs, 0 until 10 or while either barely varies; cvY is
// the coefficient of variation of y.
type correlation struct {
	x, y movingSum
	xy   float64
}

func (c *correlation) add(x, y float64) (corr, cvY float64) {
	if math.IsInf(x, 0) || math.IsInf(y, 0) {
		return 0, 0
	}
	oldX, full := c.x.add(x)
	oldY, _ := c.y.add(y)
	cvX, meanX, varX, okX := c.x.stats()
	cvY, meanY, varY, okY := c.y.stats()
	if full {
		c.xy -= oldX * oldY
	}
	c.xy += x * y
	if !okX || !okY || c.x.n < 10 {
		return 0, 0
	}
	if cvX < 0.01 || cvY < 0.01 {
		return 0, cvY
	}
	return (c.xy/float64(c.x.n) - meanX*meanY) / (math.Sqrt(varX) * math.Sqrt(varY)), cvY
}
