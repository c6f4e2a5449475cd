package core_test

import (
	"errors"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// maxClock is the last clock reading an in-memory limiter accepts.
const maxClock = 1<<62 - 1

// call is one request of a replayed history: at an instant, a cost.
type call struct{ at, cost int64 }

// replay plays history on a new limiter and returns the decision for the
// last call.
func replay(t *testing.T, l core.Limit, alg core.Algorithm, history []call) core.Decision {
	t.Helper()
	return replayWith(t, algPolicy(alg, l), history)
}

// replayWith is replay with l holding its algorithm.
func replayWith(t *testing.T, l core.Limit, history []call) core.Decision {
	t.Helper()
	clk := coretest.NewClock(time.Unix(0, history[0].at))
	lim, err := core.New(l, core.WithClock(clk), core.WithCapacity(1))
	if err != nil {
		t.Fatal(err)
	}
	var d core.Decision
	for _, c := range history {
		clk.Set(time.Unix(0, c.at))
		if d, err = lim.Allow(ctx, "k", int(c.cost)); err != nil {
			t.Fatalf("replay at %d cost %d: %v", c.at, c.cost, err)
		}
	}
	return d
}

// algPolicy is l under alg as the fuzzer plays it: a warm-up period of one
// Period for WarmUp, and LeakyBucket's default longest wait.
func algPolicy(alg core.Algorithm, l core.Limit) core.Limit {
	if alg == core.WarmUp {
		return l.WithWarmUp(l.Period, core.DefaultColdFactor)
	}
	return l.WithAlgorithm(alg)
}

// FuzzAlgorithms plays a sequence of steps (advance the clock, then ask for
// a cost) on one key and checks, for every algorithm and limit:
//
//   - the units admitted stay within what the limit allows over the time
//     elapsed (burst + rate × elapsed for the buckets, with x/time/rate's
//     documented rounding of up to 2 ns of refill per admission; Events per
//     window touched for the windows), computed exactly;
//   - every denial has RetryAfter > 0;
//   - RetryAfter is exact: replaying the history on a fresh limiter and
//     waiting RetryAfter admits the same cost, and waiting 1 ns less does
//     not;
//   - a clock outside the accepted range is refused with ErrClockRange.
//
// Each step is 5 bytes: a 32-bit advance, scaled so that the largest is about
// one interval, and a cost byte.
func FuzzAlgorithms(f *testing.F) {
	t0ns := t0.UnixNano()
	f.Add(uint8(core.GCRA), uint32(10), int64(time.Second), uint32(3), t0ns, []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 255, 255, 255, 255, 2})
	f.Add(uint8(core.TokenBucket), uint32(7), int64(3*time.Second), uint32(4), t0ns, []byte{1, 2, 3, 4, 3, 0, 0, 0, 0, 1, 9, 9, 9, 9, 2, 0, 0, 0, 0, 4})
	f.Add(uint8(core.FixedWindow), uint32(5), int64(time.Second), uint32(0), t0ns+999_999_999, []byte{0, 0, 0, 0, 5, 0, 0, 0, 1, 5, 0, 0, 0, 0, 1})
	f.Add(uint8(core.SlidingWindow), uint32(5), int64(time.Second), uint32(0), t0ns, []byte{0, 0, 0, 0, 5, 0, 0, 0, 128, 3, 0, 0, 0, 64, 2})
	f.Add(uint8(core.LeakyBucket), uint32(10), int64(time.Second), uint32(4), t0ns, []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 0, 0, 0, 200, 2})
	f.Add(uint8(core.WarmUp), uint32(3), int64(time.Second), uint32(2), t0ns, []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 64, 2, 0, 0, 0, 255, 1})
	// SlidingLog, and SlidingWindow with sub-windows: an algorithm byte
	// of 6 (mod 7) is the log; 3 with its high bit set is SlidingWindow
	// with 2 + bits 3-6 sub-windows.
	f.Add(uint8(core.SlidingLog), uint32(4), int64(time.Second), uint32(0), t0ns, []byte{0, 0, 0, 0, 1, 0, 0, 0, 64, 2, 0, 0, 0, 64, 3, 0, 0, 0, 128, 1, 0, 0, 0, 0, 2})
	f.Add(uint8(core.SlidingLog), uint32(1000), int64(time.Minute), uint32(0), t0ns+1, []byte{0, 0, 0, 0, 200, 0, 0, 0, 1, 255, 0, 0, 0, 0, 100, 0, 0, 0, 255, 7})
	f.Add(uint8(0x80|2<<3|core.SlidingWindow), uint32(6), int64(time.Second), uint32(0), t0ns+123, []byte{0, 0, 0, 0, 3, 0, 0, 0, 16, 2, 0, 0, 0, 32, 1, 0, 0, 0, 255, 5, 0, 0, 0, 64, 0})
	f.Add(uint8(0x80|8<<3|core.SlidingWindow), uint32(3), int64(10*time.Second), uint32(0), t0ns, []byte{0, 0, 0, 0, 2, 0, 0, 0, 1, 1, 0, 0, 0, 200, 2, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, algByte uint8, events uint32, period int64, burst uint32, start int64, steps []byte) {
		alg := core.Algorithm(algByte % 7)
		l := core.Limit{Events: int(events), Period: time.Duration(period), Burst: int(burst)}
		if l.Validate() != nil || len(steps) > 5*64 {
			return
		}
		l = algPolicy(alg, l)
		sub := 0
		if alg == core.SlidingWindow && algByte&0x80 != 0 {
			sub = 2 + int(algByte>>3&0xf)
			if period%int64(sub) != 0 {
				return
			}
			l = l.WithSubWindows(sub)
		}
		if alg == core.SlidingLog || sub > 0 {
			l = l.WithMaxEntries(1 << 20)
		}
		clk := coretest.NewClock(time.Unix(0, start))
		lim, err := core.New(l, core.WithClock(clk))
		if err != nil {
			if alg == core.WarmUp {
				return // a cold burst too long for the clock's range: refused, as it must be
			}
			if alg == core.SlidingLog && l.Events > 1<<20 {
				return // a log too long for the cap: refused, as it must be
			}
			t.Fatalf("New(%v): %v", l, err)
		}
		maxCost := int64(l.EffectiveBurst())
		if alg == core.FixedWindow || alg == core.SlidingWindow || alg == core.SlidingLog {
			maxCost = int64(l.Events)
		}
		var admittedLog []call // SlidingLog and sub-windows: every admission
		if start < 0 || start > maxClock {
			if _, err := lim.Allow(ctx, "k", 1); !errors.Is(err, core.ErrClockRange) {
				t.Fatalf("clock at %d: err = %v, want ErrClockRange", start, err)
			}
			return
		}
		scale := max(1, int64(l.Interval())>>32)
		now := start
		var history []call
		admitted, admissions := int64(0), int64(0)
		for i := 0; i+5 <= len(steps); i += 5 {
			adv := int64(uint32(steps[i])|uint32(steps[i+1])<<8|uint32(steps[i+2])<<16|uint32(steps[i+3])<<24) * scale
			if now > maxClock-adv {
				break
			}
			now += adv
			cost := 1 + int64(steps[i+4])%maxCost
			clk.Set(time.Unix(0, now))
			d, err := lim.Allow(ctx, "k", int(cost))
			if err != nil {
				t.Fatalf("step %d: %v", i/5, err)
			}
			history = append(history, call{now, cost})
			if d.Allowed {
				admitted += cost
				admissions++
				checkBound(t, alg, l, start, now, admitted, admissions)
				if alg == core.SlidingLog || sub > 0 {
					admittedLog = append(admittedLog, call{now, cost})
					checkLogBound(t, l, sub, admittedLog, now)
				}
				continue
			}
			if d.RetryAfter <= 0 {
				t.Fatalf("step %d: denied with RetryAfter %v", i/5, d.RetryAfter)
			}
			if now > maxClock-int64(d.RetryAfter) {
				continue
			}
			retry := append(history[:len(history):len(history)], call{now + int64(d.RetryAfter), cost})
			if got := replayWith(t, l, retry); !got.Allowed {
				t.Fatalf("step %d (%v, %v): cost %d denied after waiting RetryAfter %v: %+v", i/5, alg, l, cost, d.RetryAfter, got)
			}
			retry[len(retry)-1].at--
			if got := replayWith(t, l, retry); got.Allowed && d.RetryAfter > 1 {
				t.Fatalf("step %d (%v, %v): cost %d admitted 1 ns before RetryAfter %v", i/5, alg, l, cost, d.RetryAfter)
			}
		}
	})
}

// checkBound fails t if admitted units exceed what l allows between start
// and now, computed exactly.
func checkBound(t *testing.T, alg core.Algorithm, l core.Limit, start, now, admitted, admissions int64) {
	t.Helper()
	elapsed := big.NewInt(now - start)
	var ok bool
	switch alg {
	case core.GCRA:
		// Each unit moves the arrival time an interval (rounded up) ahead
		// and it never runs more than burst intervals ahead of now.
		iv := big.NewInt(int64(l.Interval()))
		lhs := new(big.Int).Mul(big.NewInt(admitted), iv)
		rhs := new(big.Int).Add(elapsed, new(big.Int).Mul(big.NewInt(int64(l.EffectiveBurst())), iv))
		ok = lhs.Cmp(rhs) <= 0
	case core.TokenBucket:
		// burst + events × (elapsed + 2 ns per admission) / period, plus
		// float64 rounding of at most 1e-6 token per admission.
		refill := new(big.Rat).SetFrac(
			new(big.Int).Mul(big.NewInt(int64(l.Events)), new(big.Int).Add(elapsed, big.NewInt(2*admissions))),
			big.NewInt(int64(l.Period)))
		bound := refill.Add(refill, new(big.Rat).SetInt64(int64(l.EffectiveBurst())))
		bound.Add(bound, new(big.Rat).SetFrac64(admissions, 1_000_000))
		ok = new(big.Rat).SetInt64(admitted).Cmp(bound) <= 0
	case core.LeakyBucket:
		// Each unit holds the line an interval, and a request is admitted
		// only when its turn is at most the longest wait away.
		iv := big.NewInt(int64(l.Interval()))
		lhs := new(big.Int).Mul(big.NewInt(admitted), iv)
		rhs := new(big.Int).Add(elapsed, big.NewInt(int64(core.DefaultMaxDelay)))
		rhs.Add(rhs, new(big.Int).Mul(big.NewInt(int64(l.EffectiveBurst())), iv))
		ok = lhs.Cmp(rhs) <= 0
	case core.WarmUp:
		// Each permit moves the next free instant at least Period/Events
		// on, less at most 2 ns of truncation per admission, and a
		// request is admitted only once that instant has come.
		stable := new(big.Rat).SetFrac64(int64(l.Period), int64(l.Events))
		lhs := new(big.Rat).Mul(new(big.Rat).SetInt64(admitted), stable)
		rhs := new(big.Rat).Add(new(big.Rat).SetInt(elapsed), new(big.Rat).Mul(new(big.Rat).SetInt64(int64(l.EffectiveBurst())), stable))
		rhs.Add(rhs, new(big.Rat).SetInt64(2*admissions+2))
		ok = lhs.Cmp(rhs) <= 0
	default:
		// Events per window, in every window touched.
		windows := now/int64(l.Period) - start/int64(l.Period) + 1
		ok = new(big.Int).Mul(big.NewInt(windows), big.NewInt(int64(l.Events))).Cmp(big.NewInt(admitted)) >= 0
	}
	if !ok {
		t.Fatalf("%v %v: %d units admitted in %d admissions over %d ns: more than the limit allows", alg, l, admitted, admissions, now-start)
	}
}

// checkLogBound fails t if the costs admitted (adm, in order, the last at
// now) that count at now exceed Events: those in (now−Period, now] for the
// log, those in the current sub-window of Period/sub and the sub−1 before
// it with sub-windows (sub > 0).
func checkLogBound(t *testing.T, l core.Limit, sub int, adm []call, now int64) {
	t.Helper()
	from := now - int64(l.Period) + 1
	if sub > 0 {
		q := int64(l.Period) / int64(sub)
		from = now - now%q - int64(l.Period) + q
	}
	sum := int64(0)
	for i := len(adm) - 1; i >= 0 && adm[i].at >= from; i-- {
		sum += adm[i].cost
	}
	if sum > int64(l.Events) {
		t.Fatalf("%v, %d sub-windows: %d units counted at %d, more than %d", l, sub, sum, now, l.Events)
	}
}

// TestExtremeInputs: the corners the fuzzer starts from, as plain tests.
func TestExtremeInputs(t *testing.T) {
	t.Parallel()
	t.Run("gcra-clock-near-max", func(t *testing.T) {
		clk := coretest.NewClock(time.Unix(0, math.MaxInt64-int64(time.Millisecond)))
		lim, err := core.New(core.PerSecond(10).WithBurst(3).WithAlgorithm(core.GCRA), core.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			d, err := lim.Allow(ctx, "k", 1)
			if !errors.Is(err, core.ErrClockRange) || d.Allowed {
				t.Fatalf("request %d: %+v, %v; want ErrClockRange and nothing admitted", i, d, err)
			}
		}
	})
	t.Run("token-bucket-clock-at-min", func(t *testing.T) {
		clk := coretest.NewClock(time.Unix(0, math.MinInt64))
		lim, err := core.New(core.PerSecond(10).WithBurst(1), core.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if d, err := lim.Allow(ctx, "k", 1); !errors.Is(err, core.ErrClockRange) || d != (core.Decision{}) {
				t.Fatalf("request %d: %+v, %v; want ErrClockRange", i, d, err)
			}
		}
		if err := lim.Refund(ctx, "k", 1); !errors.Is(err, core.ErrClockRange) {
			t.Fatalf("refund: %v, want ErrClockRange", err)
		}
	})
	// The longest period a limit may have, and the last clock reading the
	// limiter accepts: every algorithm admits exactly its quota and gives
	// exact waits.
	for _, alg := range algorithms {
		for _, start := range []int64{t0.UnixNano(), maxClock - int64(2*time.Hour)} {
			l := core.Limit{Events: 3, Period: time.Duration(math.MaxInt64 / 4), Burst: 2}
			quota := 2
			if alg == core.FixedWindow || alg == core.SlidingWindow || alg == core.SlidingLog {
				quota = 3
			}
			for cost := 1; cost <= quota; cost++ {
				history := []call{}
				for i := 0; i < quota; i++ {
					history = append(history, call{start + int64(i)*int64(time.Second), 1})
				}
				history = append(history, call{start + int64(quota)*int64(time.Second), int64(cost)})
				d := replay(t, l, alg, history)
				if d.Allowed || d.RetryAfter <= 0 {
					t.Fatalf("%v start %d: request past the quota: %+v", alg, start, d)
				}
				at := history[len(history)-1].at
				if at > maxClock-int64(d.RetryAfter) {
					continue // the wait ends past the clock's range
				}
				history[len(history)-1].at = at + int64(d.RetryAfter)
				if got := replay(t, l, alg, history); !got.Allowed {
					t.Fatalf("%v start %d cost %d: denied after RetryAfter %v: %+v", alg, start, cost, d.RetryAfter, got)
				}
				history[len(history)-1].at--
				if got := replay(t, l, alg, history); got.Allowed {
					t.Fatalf("%v start %d cost %d: admitted 1 ns before RetryAfter %v", alg, start, cost, d.RetryAfter)
				}
			}
		}
	}
}
