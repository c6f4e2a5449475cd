package redisstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// queue batches one Limiter's concurrent calls to one server: at most
// limit round trips are in flight at once; a call that finds them all
// taken waits, and the calls that gathered meanwhile go together, in one
// pipeline of at most size scripts, as soon as a round trip ends. A call
// that finds a free slot is sent at once, alone, exactly as without a
// queue, so a lone caller waits for nothing.
type queue struct {
	limit, size int

	mu       sync.Mutex
	inFlight int
	waiting  []*pending
}

// pending is one queued call and, once its pipeline is back, its answer.
type pending struct {
	op   string
	keys []string
	args []any
	out  [5]int64
	err  error
	done chan struct{} // closed when out and err are set
	gone atomic.Bool   // the caller stopped waiting: do not send it
}

// run makes the round trip of one call on the Redis key rkey, through q,
// the queue of the server that holds it (nil without batching), and
// returns the script's four numbers.
func (l *Limiter) run(ctx context.Context, pol *policy, q *queue, op string, code byte, rkey string, cost int, member string) ([5]int64, error) {
	ctx, cancel := breaker.Bound(ctx, l.timeout)
	if cancel != nil {
		defer cancel()
	}
	args := l.args(pol, code, cost, member)
	if q == nil {
		return reply(op, l.script.run(ctx, l.client, l.keys(rkey), args))
	}
	q.mu.Lock()
	if q.inFlight < q.limit {
		q.inFlight++
		q.mu.Unlock()
		defer l.handOff(q)
		return reply(op, l.script.run(ctx, l.client, l.keys(rkey), args))
	}
	p := &pending{op: op, keys: l.keys(rkey), args: args, done: make(chan struct{})}
	q.waiting = append(q.waiting, p)
	q.mu.Unlock()
	select {
	case <-p.done:
		return p.out, p.err
	case <-ctx.Done():
		p.gone.Store(true)
		return [5]int64{}, &core.StoreError{Op: op, Err: ctx.Err()}
	}
}

// next takes the next batch from the waiting calls, or, when none wait,
// gives back the caller's round-trip slot and returns nil.
func (q *queue) next() []*pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.waiting)
	if n == 0 {
		q.inFlight--
		return nil
	}
	if n > q.size {
		n = q.size
	}
	batch := q.waiting[:n:n]
	if n == len(q.waiting) {
		q.waiting = nil
	} else {
		q.waiting = q.waiting[n:]
	}
	return batch
}

// handOff ends a lone call's round trip: the calls that queued behind it,
// if any, go on in a goroutine of their own, which keeps the slot.
func (l *Limiter) handOff(q *queue) {
	if batch := q.next(); batch != nil {
		go l.flush(q, batch)
	}
}

// flush sends batches until no call waits.
func (l *Limiter) flush(q *queue, batch []*pending) {
	for batch != nil {
		l.pipeline(batch)
		batch = q.next()
	}
}

// pipeline sends batch in one round trip (one per master on a Cluster)
// and answers each call. It is bounded by the Limiter's timeout alone: the
// calls have their own deadlines, which they wait on, and one caller giving
// up must not fail the others. Scripts a server does not know (NOSCRIPT)
// are sent again with EVAL, in a second pipeline.
func (l *Limiter) pipeline(batch []*pending) {
	ctx := context.Background()
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	cmds := make([]*redis.Cmd, len(batch))
	pipe := l.client.Pipeline()
	for i, p := range batch {
		if !p.gone.Load() {
			cmds[i] = l.script.queue(ctx, pipe, true, p.keys, p.args)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command holds its own error
	}
	var again redis.Pipeliner
	for i, c := range cmds {
		if c != nil && noScript(c.Err()) {
			if again == nil {
				again = l.client.Pipeline()
			}
			cmds[i] = l.script.queue(ctx, again, false, batch[i].keys, batch[i].args)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, p := range batch {
		if cmds[i] != nil {
			p.out, p.err = reply(p.op, cmds[i])
		}
		close(p.done)
	}
}
