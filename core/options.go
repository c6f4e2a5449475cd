package core

import (
	"fmt"
	"hash/maphash"
	"time"
)

// Option configures a limiter made by [New].
type Option func(*options)

type options struct {
	algorithm Algorithm
	clock     Clock
	capacity  int
	shards    int
	full      FullPolicy
	denyCache bool
	seed      *maphash.Seed

	overdraft  bool
	maxDelay   time.Duration // LeakyBucket; 0: DefaultMaxDelay
	warmUp     time.Duration // WarmUp; required
	coldFactor float64       // WarmUp; 0: DefaultColdFactor
	subWindows int           // SlidingWindow; 0: none (the two-window estimate)
	maxEntries int           // SlidingLog, sub-windows; 0: DefaultMaxEntries

	maxLimits int // NewDynamic; 0: DefaultMaxLimits
}

// DefaultCapacity is how many keys a limiter tracks unless [WithCapacity]
// says otherwise: about 7 MiB of state at full.
const DefaultCapacity = 1 << 16

func defaultOptions() options {
	return options{
		algorithm: TokenBucket,
		capacity:  DefaultCapacity,
		full:      FullOverflow,
		denyCache: true,
	}
}

// WithAlgorithm selects the algorithm (default [TokenBucket]).
func WithAlgorithm(a Algorithm) Option { return func(o *options) { o.algorithm = a } }

// WithClock sets the clock decisions read (default [SystemClock]). Tests pass
// a coretest.Clock.
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithCapacity sets the most keys the limiter tracks at once (default
// [DefaultCapacity]). The bound is hard and applies to the table as a whole:
// memory never grows past it, and until the table holds n keys every new key
// is tracked on its own, however the keys spread over the table's shards
// (up to 64 independently locked parts, fewer for small capacities: at
// least 64 keys' worth each). Keys whose quota is whole again are dropped
// to make room; what a new key gets when the table holds n keys and none of
// them can be dropped is set by [WithFullPolicy].
func WithCapacity(n int) Option { return func(o *options) { o.capacity = n } }

// withShards sets how many independently locked shards hold the keys
// (default: by the capacity, see WithCapacity; lowered to the capacity when
// that is smaller). It must be a power of two. Tests use it to pin the
// layout.
func withShards(n int) Option { return func(o *options) { o.shards = n } }

// withSeed sets the seed keys are hashed with (default: random per
// limiter), so that tests can build two limiters that place keys alike.
func withSeed(s maphash.Seed) Option { return func(o *options) { o.seed = &s } }

// WithOverdraft lets the token bucket lend: a request larger than what is
// left is admitted as long as the bucket is not already in debt (no whole
// token short), and the requests after it wait until the debt is paid back
// (Guava's "the next caller pays"; seed 000's loaned burst). Without it,
// the default, a request is admitted only when its whole cost is there. A
// full bucket so admits Burst cost-1 requests at once and then one more.
func WithOverdraft() Option { return func(o *options) { o.overdraft = true } }

// DefaultMaxDelay is the longest a [LeakyBucket] makes a request wait for
// its turn unless [WithMaxDelay] says otherwise.
const DefaultMaxDelay = time.Second

// WithMaxDelay sets the longest wait a [LeakyBucket] admits a request with
// (default [DefaultMaxDelay]; 0 also means the default). It must not be
// negative, nor longer than about 73 years.
func WithMaxDelay(d time.Duration) Option { return func(o *options) { o.maxDelay = d } }

// DefaultColdFactor is how many times slower than the full rate a cold
// [WarmUp] key starts, as in Guava.
const DefaultColdFactor = 3

// WithWarmUp sets the [WarmUp] algorithm's warm-up period, the time a cold
// key takes to reach the full rate under steady demand, and its cold
// factor (at least 1; 0 means [DefaultColdFactor]): a cold key's requests
// are Interval × coldFactor apart. WarmUp requires it.
func WithWarmUp(period time.Duration, coldFactor float64) Option {
	return func(o *options) { o.warmUp, o.coldFactor = period, coldFactor }
}

// WithSubWindows makes [SlidingWindow] count over n sub-windows instead of
// weighting the previous window (Sentinel's LeapArray): windows of
// Period/n, aligned to multiples of it since the Unix epoch like
// [FixedWindow]'s, each counting the costs admitted in it, and a request
// admitted while the current sub-window and the n−1 before it, plus its
// cost, stay within Events. That span starts at the start of the oldest of
// the n, so it covers between Period−Period/n and Period of the past: a
// sub-window leaves the count whole, at the instant it ends one Period
// after its start. RetryAfter is exact (the start of the first sub-window
// in which enough old ones have left), ResetAfter is when the newest
// non-empty sub-window leaves, Remaining is exact. Refund takes cost back
// from the newest sub-windows.
//
// n must be from 2 to 2²⁰ and divide the period in nanoseconds. Each key
// keeps its non-empty sub-windows as entries of 16 bytes, at most the
// lesser of n and Events, which must be within [WithMaxEntries]; its state
// lives in the same table as [SlidingLog]'s.
//
// Its error against the exact log: in any sliding Period it admits at most
// Events plus what it admitted in one sub-window (the part of the oldest
// sub-window it no longer counts), so up to 2×Events when a burst fills a
// sub-window just before that sub-window leaves the count; spread traffic
// overshoots by about 1/n. TestSubWindowError replays 30 minutes of
// synthetic traffic under 100 per minute through the exact log, the
// two-window estimate (SlidingWindow without this option) and n
// sub-windows. The most each admitted in any sliding minute, as a multiple
// of Events (the log: 1.00):
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
func WithSubWindows(n int) Option { return func(o *options) { o.subWindows = n } }

// WithMaxEntries caps the log entries one key may need under [SlidingLog]
// (Events) or [WithSubWindows] (the lesser of n and Events), from 1 to 2²⁰
// (default [DefaultMaxEntries]; 0 also means the default). A limit that
// needs more fails at [New]. It bounds memory: 16 bytes per entry per key.
func WithMaxEntries(n int) Option { return func(o *options) { o.maxEntries = n } }

// WithFullPolicy sets what a new key gets when the table is full of live
// keys (default [FullOverflow]).
func WithFullPolicy(p FullPolicy) Option { return func(o *options) { o.full = p } }

// withDenyCache turns the lock-free cache of denied keys on or off (default
// on). The cache answers repeated denials of a key without taking a lock; it
// never changes a decision, which tests check by turning it off.
func withDenyCache(on bool) Option { return func(o *options) { o.denyCache = on } }

// FullPolicy says what a key that is not tracked gets when every tracked key
// still carries state (none is whole again, so none can be dropped for free).
type FullPolicy int

const (
	// FullOverflow, the default, leaves tracked keys alone and decides new
	// keys against one shared overflow state under the same limit, until
	// tracked keys become whole again and make room. A flood of new keys
	// therefore shares one quota, and no drained key is pushed out to come
	// back with a fresh burst.
	FullOverflow FullPolicy = iota
	// FullEvictLRU drops the least recently charged key (admitted or
	// refunded; denials do not count) to make room. It is weaker under a
	// flood of new keys: each gets a fresh burst, and the state of real
	// clients is pushed out, so that they too come back with a fresh
	// burst.
	FullEvictLRU
)

// String returns the policy's name.
func (p FullPolicy) String() string {
	switch p {
	case FullOverflow:
		return "overflow"
	case FullEvictLRU:
		return "evict-lru"
	}
	return fmt.Sprintf("FullPolicy(%d)", int(p))
}

func (o *options) validate() error {
	if o.capacity < 1 {
		return fmt.Errorf("core: capacity must be >= 1, got %d", o.capacity)
	}
	if o.shards < 0 || o.shards&(o.shards-1) != 0 || o.shards > 1<<16 {
		return fmt.Errorf("core: shards must be a power of two from 1 to 65536, got %d", o.shards)
	}
	if o.full != FullOverflow && o.full != FullEvictLRU {
		return fmt.Errorf("core: unknown full policy %d; use FullOverflow or FullEvictLRU", int(o.full))
	}
	if o.maxDelay < 0 {
		return fmt.Errorf("core: WithMaxDelay(%v): the longest wait must be > 0", o.maxDelay)
	}
	if o.warmUp < 0 || o.warmUp > maxSpan {
		return fmt.Errorf("core: WithWarmUp(%v, %v): the warm-up period must be > 0 and <= %v", o.warmUp, o.coldFactor, time.Duration(maxSpan))
	}
	if o.coldFactor != 0 && !(o.coldFactor >= 1 && o.coldFactor <= 1<<20) { // NaN fails both
		return fmt.Errorf("core: WithWarmUp(%v, %v): the cold factor must be from 1 to %d (0 for the default, %d)", o.warmUp, o.coldFactor, 1<<20, DefaultColdFactor)
	}
	if err := validateWindowOptions(o); err != nil {
		return err
	}
	if o.maxLimits < 0 || o.maxLimits > maxMaxLimits {
		return fmt.Errorf("core: WithMaxLimits(%d): the number of distinct limits must be from 1 to %d", o.maxLimits, maxMaxLimits)
	}
	return nil
}

// DefaultMaxLimits is how many distinct limits a [Dynamic] limiter tracks
// unless [WithMaxLimits] says otherwise.
const DefaultMaxLimits = 16

// maxMaxLimits bounds WithMaxLimits: a key new to its limit's table is
// looked for in every other table.
const maxMaxLimits = 256

// WithMaxLimits sets how many distinct limits a [Dynamic] limiter tracks
// (default [DefaultMaxLimits], at most 256), each with a table of its own
// of WithCapacity keys. It applies to NewDynamic only.
func WithMaxLimits(n int) Option { return func(o *options) { o.maxLimits = n } }
