package core

import (
	"fmt"
	"hash/maphash"
)

// Option configures the in-memory store of a limiter made by [New],
// [NewStack] or [NewDynamic]: what the limit is belongs to the [Limit].
type Option func(*options)

type options struct {
	clock     Clock
	capacity  int
	shards    int
	full      FullPolicy
	denyCache bool
	seed      *maphash.Seed

	maxLimits int // NewDynamic; 0: DefaultMaxLimits
}

// DefaultCapacity is how many keys a limiter tracks unless [WithCapacity]
// says otherwise: about 7 MiB of state at full.
const DefaultCapacity = 1 << 16

func defaultOptions() options {
	return options{
		capacity:  DefaultCapacity,
		full:      FullOverflow,
		denyCache: true,
	}
}

// WithClock sets the clock decisions read (default [SystemClock]). Tests pass
// a clock that moves only when told to ([Clock] shows one).
func WithClock(c Clock) Option { return func(o *options) { o.clock = c } }

// WithCapacity sets the most keys the limiter tracks at once (default
// [DefaultCapacity]). The bound is hard and applies to the table as a whole:
// memory never grows past it, and until the table holds n keys every new key
// is tracked on its own, however the keys spread over the table's shards
// (up to 64 independently locked parts, fewer for small capacities: at
// least 64 keys' worth each). Keys whose quota is whole again are dropped
// to make room; what a new key gets when the table holds n keys and none of
// its shard is whole again is set by [WithFullPolicy].
func WithCapacity(n int) Option { return func(o *options) { o.capacity = n } }

// withShards sets how many independently locked shards hold the keys
// (default: by the capacity, see WithCapacity; lowered to the capacity when
// that is smaller). It must be a power of two. Tests use it to pin the
// layout.
func withShards(n int) Option { return func(o *options) { o.shards = n } }

// withSeed sets the seed keys are hashed with (default: random per
// limiter), so that tests can build two limiters that place keys alike.
func withSeed(s maphash.Seed) Option { return func(o *options) { o.seed = &s } }

// WithFullPolicy sets what a new key gets when the table is full of live
// keys (default [FullOverflow]).
func WithFullPolicy(p FullPolicy) Option { return func(o *options) { o.full = p } }

// withDenyCache turns the lock-free cache of denied keys on or off (default
// on). The cache answers repeated denials of a key without taking a lock; it
// never changes a decision, which tests check by turning it off.
func withDenyCache(on bool) Option { return func(o *options) { o.denyCache = on } }

// FullPolicy says what a key that is not tracked gets when the table is full
// and no key of its part of the table (its shard) is whole again, so none
// can be dropped for free.
type FullPolicy int

const (
	// FullOverflow, the default, gives the new key the place of the key
	// that loses least when given up, among those of its shard: the one
	// whose window counts least, or whose bucket is closest to full (whole
	// again soonest; under WarmUp, whose next request is due soonest),
	// found at amortised constant cost. A key given up comes back as new,
	// so its owner regains what it had spent, and a key is given up only
	// while that is at most half its quota, or a single unit (under a
	// quota of one, a key charged once is given up: it regains what any
	// new key gets); a key holding units in flight under Concurrency never
	// is.
	// So a drained key keeps its state, and a flood of new keys, each used
	// once, costs its sender what it spent: fresh keys take the places of
	// its keys, one unit given back each time, and get their whole limit.
	// When even the key that loses least has spent more, the new key is
	// decided against one shared overflow state under the same limit
	// (Decision.Overflow), until keys become whole again, or spare, and
	// make room.
	FullOverflow FullPolicy = iota
	// FullEvictLRU drops the least recently charged key (admitted or
	// refunded; denials do not count) to make room, whatever it has spent.
	// It is weaker under a flood of new keys: the state of real clients is
	// pushed out, drained or not, so that they come back with a fresh
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
