package core

import "fmt"

// Option configures a limiter made by [New].
type Option func(*options)

type options struct {
	algorithm Algorithm
	clock     Clock
	capacity  int
	shards    int
	full      FullPolicy
	denyCache bool
}

// DefaultCapacity is how many keys a limiter tracks unless [WithCapacity]
// says otherwise: about 7 MiB of state at full.
const DefaultCapacity = 1 << 16

func defaultOptions() options {
	return options{
		algorithm: TokenBucket,
		capacity:  DefaultCapacity,
		shards:    64,
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
// [DefaultCapacity]). The bound is hard: memory never grows past it. What
// happens to a new key when every tracked key is still live is set by
// [WithFullPolicy]. The capacity is split evenly across the shards, and keys
// hash into them unevenly, so one shard can be full (and apply the policy)
// while the table as a whole holds a few percent less than its capacity:
// leave some headroom.
func WithCapacity(n int) Option { return func(o *options) { o.capacity = n } }

// WithShards sets how many independently locked shards hold the keys
// (default 64, lowered to the capacity when that is smaller). It must be a
// power of two.
func WithShards(n int) Option { return func(o *options) { o.shards = n } }

// WithFullPolicy sets what a new key gets when the table is full of live
// keys (default [FullOverflow]).
func WithFullPolicy(p FullPolicy) Option { return func(o *options) { o.full = p } }

// WithDenyCache turns the lock-free cache of denied keys on or off (default
// on). The cache answers repeated denials of a key without taking a lock; it
// never changes a decision, so turning it off only costs speed under load.
func WithDenyCache(on bool) Option { return func(o *options) { o.denyCache = on } }

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
	// FullEvictLRU drops the least recently used key to make room. It is
	// weaker under a flood of new keys: each gets a fresh burst, and the
	// state of real clients is pushed out, so that they too come back
	// with a fresh burst.
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
	if o.shards < 1 || o.shards&(o.shards-1) != 0 || o.shards > 1<<16 {
		return fmt.Errorf("core: shards must be a power of two from 1 to 65536, got %d", o.shards)
	}
	if o.full != FullOverflow && o.full != FullEvictLRU {
		return fmt.Errorf("core: unknown full policy %d; use FullOverflow or FullEvictLRU", int(o.full))
	}
	return nil
}
