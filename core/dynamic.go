package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// ErrTooManyLimits is wrapped by the error a [Dynamic] limiter returns when
// its limit function names a limit beyond the distinct limits it tracks
// ([WithMaxLimits]): no decision is made and nothing is charged. It is a
// server fault (a limit function that makes up limits from request data),
// never a denial.
var ErrTooManyLimits = errors.New("core: too many distinct limits")

// Dynamic is an in-memory keyed limiter whose limit is chosen per key, on
// every request, by a function of the key: tiers of API keys (free and
// paid), limits read from a database or a configuration that changes. A
// key whose limit changes keeps its state, read under the new limit exactly
// as [Keyed.SetLimit] reads every key's (a user who upgrades does not get a
// fresh quota on top of what they spent, nor lose what they have left).
//
// Each distinct limit has a table of its own, a [Keyed] with the options
// NewDynamic was given, all hashing keys alike. A key is looked up in its
// limit's table: one lookup, as in Keyed, while its limit stays the same.
// A key that table does not hold is looked for in the others, and its state
// moved over if found, so that a key lives in one table at a time. Moving a
// key, and placing a key new to every table, take one of 64 locks striped
// by the key's hash, so that two requests for one key whose limit is
// changing cannot both move it or both start it afresh.
//
// The distinct limits are bounded by [WithMaxLimits] (default
// [DefaultMaxLimits]); memory is at most that many tables of WithCapacity
// keys each. Limits are told apart by value, Name included. A request
// whose limit would be one more is refused with an error wrapping
// [ErrTooManyLimits], and one whose limit is invalid with the error [New] would give; tables are never
// dropped, so a bound reached stays reached. Decision.Limit is the key's
// limit.
//
// Its limits share one algorithm, whose state a key carries from one limit
// to another; SlidingLog, SlidingWindow with sub-windows and Concurrency
// are not supported. A limit that breaks either rule is refused, when
// first seen, with an error wrapping [ErrSetLimitUnsupported].
//
// A Dynamic is safe for concurrent use; the limit function is called
// concurrently, once per Allow and Refund, and should be fast (a map
// look-up, not a database query).
type Dynamic struct {
	limitOf func(key string) Limit
	opts    options // the tables' options, their seed included
	max     int

	tables atomic.Pointer[dynTables]
	mu     sync.Mutex // adds tables
	moves  [64]sync.Mutex
}

// dynTables is an immutable set of tables, replaced whole when one is added.
type dynTables struct {
	byLimit map[Limit]*Keyed
	list    []*Keyed
}

var _ Limiter = (*Dynamic)(nil)

// NewDynamic returns an in-memory limiter that enforces limitOf(key) on
// each key, with the options [New] takes plus [WithMaxLimits]. It fails if
// limitOf is nil or an option is invalid; limits are checked when first
// seen.
func NewDynamic(limitOf func(key string) Limit, opts ...Option) (*Dynamic, error) {
	if limitOf == nil {
		return nil, errors.New("core: NewDynamic: nil limit function; pass func(key string) core.Limit")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.seed == nil {
		s := maphash.MakeSeed()
		o.seed = &s
	}
	d := &Dynamic{limitOf: limitOf, opts: o, max: o.maxLimits}
	if d.max == 0 {
		d.max = DefaultMaxLimits
	}
	d.tables.Store(&dynTables{byLimit: map[Limit]*Keyed{}})
	return d, nil
}

// table returns l's table, made on first use.
func (d *Dynamic) table(l Limit) (*Keyed, error) {
	if k := d.tables.Load().byLimit[l]; k != nil {
		return k, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ts := d.tables.Load()
	if k := ts.byLimit[l]; k != nil {
		return k, nil
	}
	if len(ts.list) >= d.max {
		return nil, fmt.Errorf("%w: limit %s would be number %d, and the limiter tracks at most %d (WithMaxLimits); the limit function should choose among a few limits", ErrTooManyLimits, l, d.max+1, d.max)
	}
	if err := dynamicAlgorithm(l, ts.list); err != nil {
		return nil, err
	}
	k, err := newKeyed(l, &d.opts)
	if err != nil {
		return nil, err
	}
	k.dyn = d
	next := &dynTables{byLimit: make(map[Limit]*Keyed, len(ts.list)+1), list: append(ts.list[:len(ts.list):len(ts.list)], k)}
	for lim, t := range ts.byLimit {
		next.byLimit[lim] = t
	}
	next.byLimit[l] = k
	d.tables.Store(next)
	return k, nil
}

// Allow decides whether key may spend cost units now under its limit,
// limitOf(key), and if so charges them. The context is not used.
func (d *Dynamic) Allow(ctx context.Context, key string, cost int) (Decision, error) {
	k, err := d.table(d.limitOf(key))
	if err != nil {
		return Decision{}, err
	}
	return k.Allow(ctx, key, cost)
}

// Refund gives back cost units charged to key, under its limit now, never
// beyond a whole quota; a key charged under another limit has its state
// moved first, as Allow would.
func (d *Dynamic) Refund(ctx context.Context, key string, cost int) error {
	k, err := d.table(d.limitOf(key))
	if err != nil {
		return err
	}
	return k.Refund(ctx, key, cost)
}

// Limits returns the distinct limits d tracks, in the order first seen.
func (d *Dynamic) Limits() []Limit {
	ts := d.tables.Load()
	out := make([]Limit, len(ts.list))
	for i, k := range ts.list {
		out[i] = k.Limit()
	}
	return out
}

// Len returns how many keys d tracks now, over all its limits.
func (d *Dynamic) Len() int {
	n := 0
	for _, k := range d.tables.Load().list {
		n += k.Len()
	}
	return n
}

// dynamicAlgorithm reports why l cannot join a Dynamic limiter's tables:
// an algorithm whose state cannot be read under another limit, or one
// other than the tables' (a key moving between them keeps its state).
func dynamicAlgorithm(l Limit, tables []*Keyed) error {
	switch {
	case l.extended():
		return fmt.Errorf("%w: NewDynamic does not support %v, whose per-key logs are sized for one limit; use a Keyed per limit", ErrSetLimitUnsupported, algorithmName(l))
	case l.Algorithm == Concurrency:
		return fmt.Errorf("%w: NewDynamic does not support Concurrency, whose leases give units back to the limit they were taken under; use a Keyed per limit", ErrSetLimitUnsupported)
	case len(tables) > 0 && tables[0].Limit().Algorithm != l.Algorithm:
		return fmt.Errorf("%w: limit %s uses %v, and the limiter's other limits %v; a key keeps its state when its limit changes, so a Dynamic limiter's limits share one algorithm", ErrSetLimitUnsupported, l, l.Algorithm, tables[0].Limit().Algorithm)
	}
	return nil
}

// stripe is the lock that moves and first placements of key hash h take.
func (d *Dynamic) stripe(h uint64) *sync.Mutex { return &d.moves[h>>58] }

// miss decides for key hash h, which k's shard sh did not hold when looked
// at (sh unlocked): its state is moved from another table if one holds it,
// then the decision is made as in k alone.
func (d *Dynamic) miss(k *Keyed, sh *shard, h uint64, now, cost int64) (ruling, error) {
	mu := d.stripe(h)
	mu.Lock()
	defer mu.Unlock()
	d.carryLocked(k, sh, h, now)
	return k.decide(k.pol.Load(), sh, h, now, cost, true)
}

// carry moves key hash h's state into k's shard sh from whichever other
// table holds it, if sh does not hold it already (sh unlocked).
func (d *Dynamic) carry(k *Keyed, sh *shard, h uint64, now int64) {
	mu := d.stripe(h)
	mu.Lock()
	d.carryLocked(k, sh, h, now)
	mu.Unlock()
}

// carryLocked is carry, called with h's stripe locked. A key is only ever
// added to a table under its stripe, so what it finds stays true until the
// stripe is unlocked, evictions aside. Shard locks are taken one at a time.
func (d *Dynamic) carryLocked(k *Keyed, sh *shard, h uint64, now int64) {
	sh.mu.Lock()
	_, here := sh.lru.Peek(h)
	sh.mu.Unlock()
	if here {
		return
	}
	var st state
	found := false
	for _, o := range d.tables.Load().list {
		if o == k {
			continue
		}
		os := &o.shards[h&o.mask]
		os.mu.Lock()
		if st, found = os.lru.Peek(h); found {
			os.remove(h)
			o.release(os, 1)
		}
		os.mu.Unlock()
		if found {
			break
		}
	}
	if !found {
		return
	}
	sh.mu.Lock()
	if _, here = sh.lru.Peek(h); !here {
		p := k.pol.Load()
		// With no room (the table full and no key spare under
		// FullOverflow), the state is dropped and the key is decided
		// against the overflow state, as any key new to a full table is.
		if k.makeRoom(p, sh, now) {
			sh.lru.Add(h, st)
			sh.track(max(p.alg.idleAt(st), now), h)
			sh.rankIn(p, st, h)
		}
	}
	sh.mu.Unlock()
}
