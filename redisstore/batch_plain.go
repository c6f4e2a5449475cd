package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// submitPlain is submit for a call of plain commands, each answered in
// place: sent at once while a round trip is free, else in the next
// pipeline with the other calls waiting (scripts or not). The error is
// the call's (unsent, or a command's), a *core.StoreError.
func (l *Limiter) submitPlain(ctx context.Context, r *route, probe bool, op string, code byte, cmds []redis.Cmder) error {
	if q := r.q; q != nil && !probe {
		q.mu.Lock()
		if q.inFlight >= q.limit {
			p := &pending{code: code, plain: cmds, done: make(chan struct{})}
			q.waiting = append(q.waiting, p)
			q.mu.Unlock()
			if err := l.wait(ctx, op, p); err != nil {
				return err
			}
			if p.err != nil {
				return p.err
			}
			return plainErr(op, cmds)
		}
		q.inFlight++
		q.mu.Unlock()
		defer l.handOff(r)
	}
	wire, cancel := breaker.Bound(ctx, l.timeout)
	if cancel != nil {
		defer cancel()
	}
	pipe := l.client.Pipeline()
	for _, c := range cmds {
		_ = pipe.Process(wire, noRetry{c})
	}
	_, _ = pipe.Exec(wire) // each command holds its own error
	if b := r.b; b != nil {
		v, err := noEvidence, error(nil)
		for _, c := range cmds {
			v, err = worse(v, err, classify(ctx, wire, c.Err()), c.Err())
		}
		settle(b, v, err, probe)
	}
	return plainErr(op, cmds)
}

// plainErr is the first error of cmds, a *core.StoreError, or nil.
func plainErr(op string, cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return &core.StoreError{Op: op, Err: err}
		}
	}
	return nil
}

// worse is the verdict of a round trip that showed v (for err) and then
// w (for werr): a failure before an answer before no evidence.
func worse(v verdict, err error, w verdict, werr error) (verdict, error) {
	if w == failed && v != failed || w == answered && v == noEvidence {
		return w, werr
	}
	return v, err
}
