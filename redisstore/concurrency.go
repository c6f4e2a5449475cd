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

func newLeases(o options) *leases {
	ttl := o.leaseTTL
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
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

// acquire is Allow under core.Concurrency: one round trip that admits a
// new lease if its cost fits in what the key's unexpired leases leave.
func (l *Limiter) acquire(ctx context.Context, p *policy, key string, cost int) (core.Decision, error) {
	ls := l.leases
	member := strconv.Itoa(cost) + ":" + ls.tag + "." + strconv.FormatUint(ls.seq.Add(1), 36)
	v, err := l.call(ctx, p, "allow", 'a', key, cost, member)
	if err != nil {
		// If the script ran all the same (a timeout after the server
		// answered), the lease expires unrenewed within the TTL.
		return core.Decision{}, err
	}
	d := core.Decision{
		Allowed:    v[0] == 1,
		Limit:      p.limit,
		Remaining:  int(v[1]),
		RetryAfter: time.Duration(v[2]),
		ResetAfter: time.Duration(v[3]),
	}
	if d.Allowed {
		hold := &lease{l: l, p: p, key: key, cost: cost, member: member}
		hold.mu.Lock()
		hold.stop = ls.after(ls.every, hold.renew)
		hold.mu.Unlock()
		d.Lease = core.NewLease(hold.release)
	}
	return d, nil
}

// release gives the lease's units back in one round trip and stops its
// renewal. The caller's context may have ended with its request, so the
// round trip runs on a context that is never cancelled, bounded by the
// Limiter's timeout alone. A failure is returned; the lease then expires
// by itself within the TTL.
func (h *lease) release(ctx context.Context) error {
	h.mu.Lock()
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
