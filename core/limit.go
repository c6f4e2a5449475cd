package core

import (
	"strconv"
	"strings"
	"time"
)

// Limit is a policy: what a limit is and how it is enforced, as one
// comparable value that every store takes ([New], [NewStack], [NewDynamic]
// in memory; redisstore's constructors on Redis). Store options configure
// only the store (capacity, clock; on Redis: prefix, timeout, batching).
//
// Events per Period with a Burst is the rate. For the token bucket, GCRA,
// the leaky bucket and warm-up, Burst is how many cost-1 requests a fresh
// key may make at one instant; zero means "the same as Events". The window
// algorithms and Concurrency ignore Burst: their quota is Events.
//
// Name identifies the policy in RateLimit-Policy headers and gRPC details.
// It may hold letters, digits and ". _ - :" and be at most 64 bytes long.
//
// Algorithm selects how a key's state turns into a decision (the zero
// value is [TokenBucket]); the fields after it are that algorithm's
// settings, and a setting given to an algorithm it does not apply to is an
// error. Their zero values are the defaults.
//
// Build a Limit with a constructor and the With methods, each returning a
// copy,
//
//	core.PerMinute(100).WithBurst(20).WithName("api").WithAlgorithm(core.GCRA)
//	core.PerSecond(50).WithWarmUp(time.Minute, 3)
//
// or parse one from a string with [ParseLimit]. [Limit.Validate] reports
// what is wrong with a Limit, and every constructor in this module that
// takes one validates it.
type Limit struct {
	Events int
	Period time.Duration
	Burst  int
	Name   string

	// Algorithm is the algorithm (default TokenBucket).
	Algorithm Algorithm
	// Overdraft lets the token bucket lend: a request larger than what is
	// left is admitted as long as the bucket is not already in debt (no
	// whole token short), and the requests after it wait until the debt is
	// paid back (Guava's "the next caller pays"). Without it a request is
	// admitted only when its whole cost is there. TokenBucket only.
	Overdraft bool
	// MaxDelay is the longest wait a [LeakyBucket] admits a request with
	// (0: [DefaultMaxDelay]); at most about 73 years. LeakyBucket only.
	MaxDelay time.Duration
	// WarmUp is the time a cold [WarmUp] key takes to reach the full rate
	// under steady demand. The WarmUp algorithm requires it.
	WarmUp time.Duration
	// ColdFactor is how many times slower than the full rate a cold
	// [WarmUp] key starts, from 1 to 2²⁰ (0: [DefaultColdFactor]). WarmUp
	// only.
	ColdFactor float64
	// SubWindows makes [SlidingWindow] count over that many sub-windows
	// instead of weighting the previous window (see
	// [Limit.WithSubWindows]); from 2 to 2²⁰, dividing the period in
	// nanoseconds. SlidingWindow only.
	SubWindows int
	// MaxEntries caps the log entries one key may need under [SlidingLog]
	// (Events) or sub-windows (the lesser of SubWindows and Events), from 1
	// to 2²⁰ (0: [DefaultMaxEntries]). A limit that needs more is invalid.
	// It bounds memory: 16 bytes per entry per key.
	MaxEntries int
}

// PerSecond returns a limit of n events per second with a burst of n.
func PerSecond(n int) Limit { return Limit{Events: n, Period: time.Second, Burst: n} }

// PerMinute returns a limit of n events per minute with a burst of n.
func PerMinute(n int) Limit { return Limit{Events: n, Period: time.Minute, Burst: n} }

// PerHour returns a limit of n events per hour with a burst of n.
func PerHour(n int) Limit { return Limit{Events: n, Period: time.Hour, Burst: n} }

// PerDay returns a limit of n events per 24 hours with a burst of n.
func PerDay(n int) Limit { return Limit{Events: n, Period: 24 * time.Hour, Burst: n} }

// Every returns a limit of one event per interval with a burst of 1.
func Every(interval time.Duration) Limit { return Limit{Events: 1, Period: interval, Burst: 1} }

// InFlight returns a [Concurrency] limit of n units in flight per key, with
// a one-second retry hint.
func InFlight(n int) Limit {
	return Limit{Events: n, Period: time.Second, Burst: n, Algorithm: Concurrency}
}

// WithBurst returns a copy of l with the given burst. 0 means the same as
// Events, as it does in ParseLimit ("5/s burst=0") and in the rate-limit
// service's YAML (burst: 0): the default, as when the burst is left out.
func (l Limit) WithBurst(burst int) Limit { l.Burst = burst; return l }

// WithName returns a copy of l with the given policy name.
func (l Limit) WithName(name string) Limit { l.Name = name; return l }

// WithAlgorithm returns a copy of l enforced by algorithm a.
func (l Limit) WithAlgorithm(a Algorithm) Limit { l.Algorithm = a; return l }

// WithOverdraft returns a copy of l as a token bucket that lends (see
// Limit.Overdraft).
func (l Limit) WithOverdraft() Limit { l.Algorithm, l.Overdraft = TokenBucket, true; return l }

// WithMaxDelay returns a copy of l as a [LeakyBucket] that admits requests
// with waits up to d.
func (l Limit) WithMaxDelay(d time.Duration) Limit {
	l.Algorithm, l.MaxDelay = LeakyBucket, d
	return l
}

// WithWarmUp returns a copy of l as a [WarmUp] limit whose cold keys take
// period to reach the full rate, starting coldFactor times slower (0 for
// [DefaultColdFactor]).
func (l Limit) WithWarmUp(period time.Duration, coldFactor float64) Limit {
	l.Algorithm, l.WarmUp, l.ColdFactor = WarmUp, period, coldFactor
	return l
}

// WithSubWindows returns a copy of l as a [SlidingWindow] that counts over
// n sub-windows instead of weighting the previous window (Sentinel's
// LeapArray): windows of Period/n, aligned to multiples of it since the
// Unix epoch like [FixedWindow]'s, each counting the costs admitted in it,
// and a request admitted while the current sub-window and the n−1 before
// it, plus its cost, stay within Events. That span covers between
// Period−Period/n and Period of the past. RetryAfter, ResetAfter and
// Remaining are exact; Refund takes cost back from the newest sub-windows.
// Each key keeps its non-empty sub-windows as 16-byte entries, at most the
// lesser of n and Events, which must be within MaxEntries.
//
// Its error against the exact log: in any sliding Period it admits at most
// Events plus what it admitted in one sub-window, so up to 2×Events when a
// burst fills a sub-window just before it leaves the count; spread traffic
// overshoots by about 1/n. TestSubWindowError replays 30 minutes of
// synthetic traffic under 100 per minute; the most each variant admitted
// in any sliding minute, as a multiple of Events (the log: 1.00):
//
//	traffic                     two windows  n=2   n=4   n=10  n=60
//	steady, 2× the rate         1.32         1.35  1.17  1.07  1.01
//	Poisson, 1.2× the rate      1.28         1.26  1.13  1.08  1.03
//	bursts of 20–150 in 100 ms  1.50         2.00  1.63  1.63  1.87
//	ramp from 0.5× to 3×        1.03         1.17  1.09  1.04  1.01
//
// and what each admitted in all, against the log:
//
//	steady                      +0.1%        +1.2% +0.6% +0.2% +0.0%
//	Poisson                     +1.4%        +3.5% +2.8% +1.9% +0.6%
//	bursts                      +2.1%        +19%  +5.3% +2.9% +1.0%
//	ramp                        −0.2%        +0.4% +0.3% +0.3% +0.3%
//
// None of them lets through a burst straddling a minute boundary (the
// fixed window's worst case).
func (l Limit) WithSubWindows(n int) Limit {
	l.Algorithm, l.SubWindows = SlidingWindow, n
	return l
}

// WithMaxEntries returns a copy of l whose keys' logs may hold up to n
// entries (see Limit.MaxEntries).
func (l Limit) WithMaxEntries(n int) Limit { l.MaxEntries = n; return l }

// EffectiveBurst is the burst the token bucket and GCRA use: Burst, or Events
// when Burst is zero.
func (l Limit) EffectiveBurst() int {
	if l.Burst == 0 {
		return l.Events
	}
	return l.Burst
}

// Interval is the time one event's worth of quota takes to come back,
// Period/Events rounded up to a whole nanosecond so that rounding never admits
// more than the policy says.
func (l Limit) Interval() time.Duration {
	if l.Events <= 0 {
		return 0
	}
	return (l.Period + time.Duration(l.Events) - 1) / time.Duration(l.Events)
}

// extended reports whether l keeps its state in the extended table (see
// extTable): the exact log and sub-windows.
func (l Limit) extended() bool {
	return l.Algorithm == SlidingLog || l.Algorithm == SlidingWindow && l.SubWindows != 0
}

// String formats l in the syntax [ParseLimit] reads. For every valid l,
// ParseLimit(l.String()) is l, except that a zero Burst reads back as
// Events.
func (l Limit) String() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(l.Events))
	b.WriteByte('/')
	b.WriteString(periodWord(l.Period))
	opt := func(k, v string) { b.WriteByte(' '); b.WriteString(k); b.WriteByte('='); b.WriteString(v) }
	if l.Burst != 0 && l.Burst != l.Events {
		opt("burst", strconv.Itoa(l.Burst))
	}
	if l.Name != "" {
		opt("name", l.Name)
	}
	if l.Algorithm != TokenBucket {
		opt("algorithm", l.Algorithm.String())
	}
	if l.Overdraft {
		opt("overdraft", "true")
	}
	if l.MaxDelay != 0 {
		opt("max-delay", l.MaxDelay.String())
	}
	if l.WarmUp != 0 {
		opt("warm-up", l.WarmUp.String())
	}
	if l.ColdFactor != 0 {
		opt("cold-factor", strconv.FormatFloat(l.ColdFactor, 'g', -1, 64))
	}
	if l.SubWindows != 0 {
		opt("sub-windows", strconv.Itoa(l.SubWindows))
	}
	if l.MaxEntries != 0 {
		opt("max-entries", strconv.Itoa(l.MaxEntries))
	}
	return b.String()
}

// DefaultName is the name a stack gives a limit that has none: its rate,
// as "5-per-s", "1000-per-h" or "30-per-10s". Both stores name a stack's
// limits alike.
func DefaultName(l Limit) string {
	return strconv.Itoa(l.Events) + "-per-" + periodWord(l.Period)
}

// periodWord writes a period as Limit.String does: s, min, h, d, or a Go
// duration.
func periodWord(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "min"
	case time.Hour:
		return "h"
	case 24 * time.Hour:
		return "d"
	}
	return d.String()
}
