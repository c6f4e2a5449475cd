package core

import (
	"errors"
	"fmt"
	"math"
)

// SetLimit makes k enforce l from now on, keeping every key's state: no key
// gets a fresh quota, and none loses what it has spent. It fails, changing
// nothing, if l is invalid, exactly as [New] would, or names another
// algorithm.
//
// The change is atomic: a decision is made under the old limit or the new
// one, never a mix, and once SetLimit returns every decision is made under
// l (decisions under way meanwhile may finish under the old one). Denials
// cached under the old limit are dropped.
//
// A key's state is read under the new limit as follows; an arrival under
// the new limit then proceeds from it as the algorithm always does.
//
//   - TokenBucket: the tokens the key held at its last update are kept, capped
//     at the new burst, and refill at the new rate from that update on. Raising
//     the burst adds no tokens at once: the key fills up to it at the new rate.
//   - GCRA and LeakyBucket: the key's theoretical arrival instant (when its
//     quota is whole again; the instant its line drains) is kept. The time the
//     key owes is kept, so what it may spend now is that debt read at the new
//     interval and burst: a key whole again stays whole, a key in debt beyond
//     the new burst is refused until the debt is within it.
//   - FixedWindow: the count of the stored window is kept while the window of
//     the new period that holds the stored window's start is current; a count
//     above the new Events is refused until the window ends (Remaining 0).
//     With the same period, that is simply: the count is kept for the window.
//   - SlidingWindow: as FixedWindow, for both counts: a stored window counts
//     as the window of the new period holding its start, so its counts are the
//     current and previous ones while that window is current, and its current
//     count becomes the previous one in the window after.
//   - WarmUp: the stored permits (capped at the new maximum) and the next free
//     instant are kept.
//   - Concurrency: the units each key has in flight are kept, and their
//     leases give them back as before; a key holding more than the new
//     Events is refused (Remaining 0) until enough are released.
//
// SetLimit cannot change the algorithm: the keys' state belongs to it.
// SlidingLog and SlidingWindow with sub-windows keep logs sized for
// their limit: SetLimit on such a limiter fails with [ErrSetLimitUnsupported],
// changing nothing.
//
// The overflow state (FullOverflow) carries over the same way. Keys keep
// their place in the table; the first time the table looks for keys to drop
// or give up after a change, each shard is scanned once to index its keys'
// idle instants and ranks under the new limit.
func (k *Keyed) SetLimit(l Limit) error {
	if k.ext != nil {
		return fmt.Errorf("%w: %v keeps per-key logs sized for its limit; make a new limiter for %s", ErrSetLimitUnsupported, algorithmName(k.Limit()), l)
	}
	if old := k.Limit().Algorithm; l.Algorithm != old {
		return fmt.Errorf("%w: the limiter's keys hold %v state, which %v cannot read; make a new limiter for %s", ErrSetLimitUnsupported, old, l.Algorithm, l)
	}
	p, err := newPolicy(l)
	if err != nil {
		return err
	}
	k.setMu.Lock()
	defer k.setMu.Unlock()
	if c, ok := p.alg.(*concurrency); ok {
		// Leases name generations of the old policy's counter: keep
		// counting from it, so that no new state takes an old one's.
		c.gen = k.pol.Load().alg.(*concurrency).gen
	}
	k.pol.Store(p)
	// A decision that loaded the old policy before the store above checks
	// it again under its shard's lock (see decide), so once a shard has
	// been through here, nothing caches a denial of the old limit in it.
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		for j := range s.slots {
			s.slots[j].clear()
		}
		// Idle instants and ranks are the old limit's: rescan.
		s.idle.floor = math.MinInt64
		s.light.floor = math.MinInt64
		s.mu.Unlock()
	}
	return nil
}

// ErrSetLimitUnsupported is wrapped by the error [Keyed.SetLimit] returns
// for an algorithm whose per-key state cannot be read under another limit
// (SlidingLog, SlidingWindow with sub-windows), and by the error
// [NewDynamic] returns for an algorithm it cannot move between limits.
var ErrSetLimitUnsupported = errors.New("core: the limit cannot change under this algorithm")

// algorithmName names l's algorithm in errors, with its sub-windows.
func algorithmName(l Limit) string {
	if l.Algorithm == SlidingWindow && l.SubWindows != 0 {
		return fmt.Sprintf("%v with %d sub-windows", l.Algorithm, l.SubWindows)
	}
	return l.Algorithm.String()
}
