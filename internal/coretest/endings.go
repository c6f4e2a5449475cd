package coretest

import (
	"context"
	"sync"

	"github.com/floodgate/floodgate/core"
)

// Endings is a core.Limiter that admits every request, under a limit of
// 10 a second named in its decisions, with a lease that records how the
// request ended (core.Ending), as an adaptive limit learns it: adapters'
// tests check with it that they tell each lease how its request ended.
// The zero Endings is ready; it is safe for concurrent use.
type Endings struct {
	mu  sync.Mutex
	got []core.Ending
}

// Allow admits the request with a lease whose End records its ending.
func (e *Endings) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Allowed: true, Limit: core.PerSecond(10), Lease: core.NewLease(func(_ context.Context, x core.Ending) error {
		e.mu.Lock()
		e.got = append(e.got, x)
		e.mu.Unlock()
		return nil
	})}, nil
}

// Refund does nothing: Endings keeps no quota.
func (e *Endings) Refund(context.Context, string, int) error { return nil }

// Take returns the endings recorded since the last Take, in the order
// the leases ended, and forgets them.
func (e *Endings) Take() []core.Ending {
	e.mu.Lock()
	defer e.mu.Unlock()
	got := e.got
	e.got = nil
	return got
}
