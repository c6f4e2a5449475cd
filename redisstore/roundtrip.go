package redisstore

import (
	"context"

	"github.com/floodgate/floodgate/internal/breaker"
)

// call makes one round trip for key through the route of the server that
// holds it: while that server's breaker is open, only its probe goes to
// Redis and every other call gets errCircuitOpen at once. member is a
// concurrency lease's member, empty for the other algorithms.
func (l *Limiter) call(ctx context.Context, p *policy, op string, code byte, key string, cost int, member string) (vals, error) {
	var rkey string // made at most once; not at all to fail fast, but on a Cluster
	r := l.one
	if l.masters != nil {
		rkey = l.key(key)
		r = l.masters.forKey(ctx, rkey)
	}
	if b := r.b; b != nil && !b.Closed() {
		if !b.TryProbe() {
			return vals{}, errOpen(code)
		}
		if rkey == "" {
			rkey = l.key(key)
		}
		return l.probe(ctx, p, r, op, code, rkey, cost, member)
	}
	if rkey == "" {
		rkey = l.key(key)
	}
	return l.run(ctx, p, r, false, op, code, rkey, cost, member)
}

// probe is call for the caller that owns the probe of r's breaker.
func (l *Limiter) probe(ctx context.Context, p *policy, r *route, op string, code byte, rkey string, cost int, member string) (vals, error) {
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

// route is what the calls to one server share: its circuit breaker and its
// batching queue, each nil when turned off. Calls to one server wait only
// on that server: a dead Cluster master holds up none of the others' keys.
type route struct {
	b  *breaker.Breaker
	q  *queue
	fn functions // whether the server has Functions
}

// routes makes routes as the options say.
type routes struct {
	breaker        *breaker.Config // nil: no breaker
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
