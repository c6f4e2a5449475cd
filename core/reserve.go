package core

import (
	"context"
	"sync/atomic"
)

// Reservation is quota charged now and settled later: Commit keeps the
// charge, Cancel gives it back. Ad serving is the classic case: check a
// user's frequency cap before an auction, and keep the charge only for the
// ad actually shown.
//
// Whichever of Commit and Cancel comes first settles the reservation; later
// calls of either do nothing, and concurrent calls settle it once. So
// Cancel refunds at most once, and never after Commit. A reservation never
// settled keeps its charge, as Commit would. A nil *Reservation (a request
// that was refused or failed) is valid and settles nothing.
type Reservation struct {
	lim   Limiter
	key   string
	n     int
	state atomic.Int32 // 0 open, 1 committed, 2 cancelled
}

// Reserve charges n units to key on lim, as lim.Allow does, and returns a
// Reservation to settle them when admitted (nil otherwise), with the
// Decision and error of Allow.
//
// A refund gives back what the algorithm can give back at that moment,
// never beyond a whole quota (see each algorithm's Refund): with GCRA and
// the token bucket exactly the units reserved, less whatever the quota has
// regained since; with a fixed window, the units, if the window they were
// charged in is still current. A shaped request's Delay is the caller's to
// wait; the concurrency Lease of an admission stays the caller's to
// release.
func Reserve(ctx context.Context, lim Limiter, key string, n int) (*Reservation, Decision, error) {
	d, err := lim.Allow(ctx, key, n)
	if err != nil || !d.Allowed {
		return nil, d, err
	}
	return &Reservation{lim: lim, key: key, n: n}, d, nil
}

// Commit keeps the reserved units charged. It reports whether this call
// settled the reservation (false: it was settled already, either way).
func (r *Reservation) Commit() bool {
	return r != nil && r.state.CompareAndSwap(0, 1)
}

// Cancel gives the reserved units back with the limiter's Refund, the first
// time the reservation is settled; otherwise it does nothing and returns
// nil. Its error is Refund's (a store that could not be reached: the
// units then stay charged, and the reservation stays cancelled).
func (r *Reservation) Cancel(ctx context.Context) error {
	if r == nil || !r.state.CompareAndSwap(0, 2) {
		return nil
	}
	return r.lim.Refund(ctx, r.key, r.n)
}

// Committed reports whether Commit settled the reservation.
func (r *Reservation) Committed() bool { return r != nil && r.state.Load() == 1 }

// Cancelled reports whether Cancel settled the reservation.
func (r *Reservation) Cancelled() bool { return r != nil && r.state.Load() == 2 }
