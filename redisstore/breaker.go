package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/fallback"
	"github.com/floodgate/floodgate/internal/breaker"
)

// ErrCircuitOpen is the cause of the *core.StoreError that Allow and Refund
// return at once, with no round trip, while the circuit breaker of the
// server that holds the key is open: that server failed too often, and
// only one probe at a time goes to it until it answers again (see "When
// Redis fails" in the package documentation). Calls waiting for a round
// trip when the breaker opens get it too. errors.Is(err, core.ErrStore)
// holds as for any other store failure, so the adapters' failure mode
// applies unchanged.
var ErrCircuitOpen = errors.New("redisstore: circuit breaker open, Redis not called; it failed too often and is probed until it answers")

// The errors of a breaker that turns a call away, made once so that
// failing fast allocates nothing. Callers must not modify them.
var (
	errOpenAllow   = &core.StoreError{Op: "allow", Err: ErrCircuitOpen}
	errOpenRefund  = &core.StoreError{Op: "refund", Err: ErrCircuitOpen}
	errOpenRelease = &core.StoreError{Op: "release", Err: ErrCircuitOpen}
	errOpenRenew   = &core.StoreError{Op: "renew", Err: ErrCircuitOpen}
)

// errOpen is the error of a call that the open breaker turns away.
func errOpen(code byte) error {
	switch code {
	case 'r':
		return errOpenRefund
	case 'l':
		return errOpenRelease
	case 'n':
		return errOpenRenew
	}
	return errOpenAllow
}

// call makes one round trip for key through the route of the server that
// holds it: while that server's breaker is open, only its probe goes to
// Redis and every other call gets ErrCircuitOpen at once. member is a
// concurrency lease's member, empty for the other algorithms.
func (l *Limiter) call(ctx context.Context, p *policy, op string, code byte, key string, cost int, member string) ([5]int64, error) {
	var rkey string // made at most once; not at all to fail fast, but on a Cluster
	r := l.one
	if l.masters != nil {
		rkey = l.Key(key)
		r = l.masters.forKey(ctx, rkey)
	}
	if b := r.b; b != nil && !b.Closed() {
		if !b.TryProbe() {
			return [5]int64{}, errOpen(code)
		}
		if rkey == "" {
			rkey = l.Key(key)
		}
		return l.probe(ctx, p, r, op, code, rkey, cost, member)
	}
	if rkey == "" {
		rkey = l.Key(key)
	}
	return l.run(ctx, p, r, false, op, code, rkey, cost, member)
}

// probe is call for the caller that owns the probe of r's breaker.
func (l *Limiter) probe(ctx context.Context, p *policy, r *route, op string, code byte, rkey string, cost int, member string) ([5]int64, error) {
	// A client that panics must not keep the probe, or Redis would never
	// be called again.
	done := false
	defer func() {
		if !done {
			r.b.Inconclusive(true)
		}
	}()
	v, err := l.run(ctx, p, r, true, op, code, rkey, cost, member)
	done = true
	return v, err
}

// settle tells b what a round trip showed about the server (see classify);
// err is the round trip's error when it failed.
func settle(b *breaker.Breaker, v verdict, err error, probe bool) {
	switch v {
	case answered:
		b.Success(probe)
	case failed:
		b.Failure(err, probe)
	default:
		b.Inconclusive(probe)
	}
}

// route is what the calls to one server share: its circuit breaker and its
// batching queue, each nil when turned off. Calls to one server wait only
// on that server: a dead Cluster master holds up none of the others' keys.
type route struct {
	b *breaker.Breaker
	q *queue
}

// routes makes routes as the options say.
type routes struct {
	breaker        *breaker.Config // nil: WithoutBreaker
	batching       bool
	inFlight, size int
}

func (rs routes) make() (*route, error) {
	r := &route{}
	if rs.batching {
		r.q = &queue{limit: rs.inFlight, size: rs.size}
	}
	if rs.breaker != nil {
		c := *rs.breaker
		if r.q != nil {
			// The calls waiting for a round trip when the breaker opens
			// are answered at once, as the calls that come after them.
			c.OnStateChange = func(_, to breaker.State) {
				if to == breaker.Open {
					r.q.drain()
				}
			}
		}
		b, err := breaker.New(c)
		if err != nil {
			return nil, err
		}
		r.b = b
	}
	return r, nil
}

// masters keeps a route per Cluster master, so that a dead master turns
// away only the keys it holds while the others go on deciding. Masters are
// told apart by address, which a restarted node keeps.
type masters struct {
	client *redis.ClusterClient
	routes routes
	// unknown takes the calls whose master the client cannot name: it has
	// no cluster state yet, and loading it failed.
	unknown *route

	byAddr atomic.Pointer[map[string]*route] // copied on write
	mu     sync.Mutex                        // serializes writes
}

func newMasters(c *redis.ClusterClient, rs routes) (*masters, error) {
	unknown, err := rs.make()
	if err != nil {
		return nil, err
	}
	m := &masters{client: c, routes: rs, unknown: unknown}
	m.byAddr.Store(&map[string]*route{})
	return m, nil
}

// forKey returns the route of the master that holds the Redis key rkey.
// With the cluster state loaded, finding the master takes no round trip.
func (m *masters) forKey(ctx context.Context, rkey string) *route {
	if b := m.unknown.b; b != nil && !b.Closed() {
		// The state could not be loaded: calls wait on unknown's probe
		// rather than try again, each, to load it.
		return m.unknown
	}
	node, err := m.client.MasterForKey(ctx, rkey)
	if err != nil {
		return m.unknown
	}
	addr := node.Options().Addr
	if r := (*m.byAddr.Load())[addr]; r != nil {
		return r
	}
	return m.add(addr)
}

// add returns addr's route, made if no other caller made it first.
func (m *masters) add(addr string) *route {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.byAddr.Load()
	if r := old[addr]; r != nil {
		return r
	}
	r, _ := m.routes.make() // the same routes made unknown, so they are valid
	next := make(map[string]*route, len(old)+1)
	for a, x := range old {
		next[a] = x
	}
	next[addr] = r
	m.byAddr.Store(&next)
	return r
}

// BreakerState reports the circuit breaker's state (see WithBreaker):
// Closed while calls go through, Open while they fail at once, HalfOpen
// when the next call will probe. On a Cluster, with a breaker per master,
// it is the worst of them (Open before HalfOpen before Closed). Without a
// breaker (WithoutBreaker) it is always Closed. Metrics read it at each
// scrape (promobs.WithBreaker(name, lim.BreakerState)); it is cheap and
// safe for concurrent use.
func (l *Limiter) BreakerState() fallback.State {
	worst := fallback.Closed
	see := func(r *route) {
		if r == nil || r.b == nil {
			return
		}
		switch s := r.b.State(); {
		case s == fallback.Open:
			worst = s
		case s == fallback.HalfOpen && worst == fallback.Closed:
			worst = s
		}
	}
	see(l.one)
	if m := l.masters; m != nil {
		see(m.unknown)
		for _, r := range *m.byAddr.Load() {
			see(r)
		}
	}
	return worst
}

// BreakerState reports the breaker state of the stack's calls, as
// Limiter.BreakerState does.
func (s *Stack) BreakerState() fallback.State { return s.l.BreakerState() }
