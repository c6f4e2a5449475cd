package redisstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// leases is what a core.Concurrency Limiter keeps for the leases it hands
// out: the prefix that makes their ids unique, and how they are renewed.
type leases struct {
	ttl   time.Duration
	every time.Duration // renewal period: a third of ttl
	after func(d time.Duration, f func()) (stop func() bool)
	tag   string // random per Limiter: ids never collide across instances
	seq   atomic.Uint64
}

// newLeases returns the leases of a Limiter, renewed by o's timer every
// third of ttl.
func newLeases(o options, ttl time.Duration) *leases {
	return &leases{
		ttl:   ttl,
		every: ttl / 3,
		after: o.after,
		tag:   strconv.FormatUint(rand.Uint64(), 36),
	}
}

// lease is one admission's hold on its units in Redis: the sorted-set
// member '<cost>:<id>' of the key's state, renewed every ttl/3 until it is
// released.
type lease struct {
	l      *Limiter
	p      *policy // the policy it was taken under, whose arguments its calls pass
	key    string
	cost   int
	member string

	mu       sync.Mutex
	stop     func() bool // the pending renewal's; nil while one runs
	released bool
}

// member returns a new lease's sorted-set member: its cost and an id
// unique across instances.
func (ls *leases) member(cost int) string {
	return strconv.Itoa(cost) + ":" + ls.tag + "." + strconv.FormatUint(ls.seq.Add(1), 36)
}

// hold returns the Lease of an admission that took member's units on key
// (under every concurrency layer of a stack), renewed from now on until it
// is released.
func (l *Limiter) hold(p *policy, key string, cost int, member string) core.Lease {
	ls := l.leases
	h := &lease{l: l, p: p, key: key, cost: cost, member: member}
	h.mu.Lock()
	h.stop = ls.after(ls.every, h.renew)
	h.mu.Unlock()
	return core.LeaseOf(h, 0)
}

// leasedAt reports whether a stack's layer i is a concurrency limit, whose
// refusals the deny cache must not hold: they end when any instance
// releases a lease.
func (l *Limiter) leasedAt(i int64) bool {
	return l.leased != nil && l.leased[i]
}

// EndLease gives the lease's units back in one round trip and stops its
// renewal, the first time it is called (a lease is one admission, of
// generation 0: core.Holder). The caller's context may have ended with its
// request, so the round trip runs on a context that is never cancelled,
// bounded by the Limiter's timeout alone. A failure is returned; the lease
// then expires by itself within the TTL.
func (h *lease) EndLease(ctx context.Context, _ uint64, _ core.Ending) error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return nil
	}
	h.released = true
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
	h.mu.Unlock()
	_, err := h.l.call(context.WithoutCancel(ctx), h.p, "release", 'l', h.key, h.cost, h.member)
	return err
}

// renew moves the lease's expiry to a TTL from now, if it is still held
// in Redis, and schedules the next renewal. A lease that Redis no longer
// holds (expired, or given away by a Refund) is not brought back and is
// renewed no more; a renewal that failed is tried again a period later,
// while the lease may still be unexpired.
func (h *lease) renew() {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return
	}
	h.stop = nil
	h.mu.Unlock()
	v, err := h.l.call(context.Background(), h.p, "renew", 'n', h.key, h.cost, h.member)
	if err == nil && v[0] == 0 {
		return
	}
	h.mu.Lock()
	if !h.released {
		h.stop = h.l.leases.after(h.l.leases.every, h.renew)
	}
	h.mu.Unlock()
}
