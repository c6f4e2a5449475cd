package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	lone     int // a Multi's lone calls on several servers under way (see idle)
	waiting  []*pending
}

// pending is one queued call and, once its pipeline is back, its answer.
type pending struct {
	code byte // for the error of a call the breaker turns away
	keys []string
	args []any
	// plain, if set, are the call's commands, sent as they are and answered
	// in place (WithClientClockWindows): no script.
	plain []redis.Cmder
	cmd   *redis.IntSliceCmd // the answer, which holds the server's error
	err   error              // else why the call was not sent
	done  chan struct{}      // closed when cmd or err is set
	gone  atomic.Bool        // the caller stopped waiting: do not send it
}

// run makes the round trip of one call on the Redis key rkey through r,
// the route of the server that holds it, and returns the script's
// numbers; see submit.
func (l *Limiter) run(ctx context.Context, pol *policy, r *route, probe bool, op string, code byte, rkey string, cost int, member string) (vals, error) {
	cmd, err := l.submit(ctx, r, probe, op, code, l.keys(rkey), l.args(pol, code, cost, member))
	if err != nil {
		return vals{}, err
	}
	return reply(op, cmd)
}

// submit makes the round trip of one script call, on keys with args,
// through r, the route of the server that holds them, and returns its
// answer (which holds the server's error, if any), or a *core.StoreError
// if the call was never answered; it tells r's breaker, if any, what the
// round trip showed about the server. The Limiter's timeout bounds the
// round trip from when it is sent: a call sent at once, alone, from then;
// a queued call's pipeline from when it leaves. It also bounds how long a
// queued call waits in all (with the caller's context), so that no request
// waits longer than the timeout; but time queued is never counted against
// the server, only the pipelines' round trips are. probe marks the
// breaker's probe, which is always sent at once.
func (l *Limiter) submit(ctx context.Context, r *route, probe bool, op string, code byte, keys []string, args []any) (*redis.IntSliceCmd, error) {
	q := r.q
	if q == nil || probe {
		return l.send(ctx, r, probe, keys, args), nil
	}
	q.mu.Lock()
	if q.inFlight < q.limit {
		q.inFlight++
		q.mu.Unlock()
		defer l.handOff(r)
		return l.send(ctx, r, false, keys, args), nil
	}
	p := &pending{code: code, keys: keys, args: args, done: make(chan struct{})}
	q.waiting = append(q.waiting, p)
	q.mu.Unlock()
	if err := l.wait(ctx, op, p); err != nil {
		return nil, err
	}
	return p.cmd, p.err
}

// wait waits for p's answer, within the Limiter's timeout and ctx; an
// error is why the caller stopped waiting.
func (l *Limiter) wait(ctx context.Context, op string, p *pending) error {
	var expired <-chan time.Time
	if l.timeout > 0 {
		t := time.NewTimer(l.timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.gone.Store(true)
		return &core.StoreError{Op: op, Err: ctx.Err()}
	case <-expired:
		p.gone.Store(true)
		return &core.StoreError{Op: op, Err: errQueueTimeout}
	}
}

// errQueueTimeout is the cause of a queued call that had no answer within
// the Limiter's timeout: the request waited as long as a round trip may
// take, so it gets its failure mode now, whatever becomes of the round
// trips ahead of it. Time queued says nothing about the server and is not
// counted by the breaker; the pipelines' own round trips are.
var errQueueTimeout = fmt.Errorf("redisstore: no answer within the timeout while queued behind other round trips: %w", context.DeadlineExceeded)

// send makes one call's round trip alone, bounded by the Limiter's timeout
// from now, and tells r's breaker, if any, what it showed.
func (l *Limiter) send(ctx context.Context, r *route, probe bool, keys []string, args []any) *redis.IntSliceCmd {
	wire, cancel := breaker.Bound(ctx, l.timeout)
	if cancel != nil {
		defer cancel()
	}
	cmd := l.exec(wire, r, keys, args)
	if b := r.b; b != nil {
		// Before cancel, which would end wire in any case.
		settle(b, classify(ctx, wire, cmd.Err()), cmd.Err(), probe)
	}
	return cmd
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

// drain answers every waiting call at once with errCircuitOpen, unsent:
// the breaker has just opened. Calls whose pipeline has left are answered
// by their round trip.
func (q *queue) drain() {
	q.mu.Lock()
	waiting := q.waiting
	q.waiting = nil
	q.mu.Unlock()
	for _, p := range waiting {
		p.err = errOpen(p.code)
		close(p.done)
	}
}

// handOff ends a lone call's round trip on r: the calls that queued behind
// it, if any, go on in a goroutine of their own, which keeps the slot.
func (l *Limiter) handOff(r *route) {
	if batch := r.q.next(); batch != nil {
		go l.flush(r, batch)
	}
}

// flush sends batches on r until no call waits.
func (l *Limiter) flush(r *route, batch []*pending) {
	for batch != nil {
		l.pipeline(r, batch)
		batch = r.q.next()
	}
}

// pipeline sends batch in one round trip to r's server and answers each
// call, or, if r's breaker (if any) opened while they waited, answers them
// at once with errCircuitOpen. The round trip is bounded by the Limiter's
// timeout from now, when it leaves, and by nothing else: the calls have
// their own deadlines, which they wait on, and one caller giving up must
// not fail the others. Calls the server answers it did not run (see
// Limiter.again: NOSCRIPT, a function missing) are sent again, in a
// pipeline of their own, after one FUNCTION LOAD if a function was
// missing. The round trip, not each call, is one outcome for the breaker.
func (l *Limiter) pipeline(r *route, batch []*pending) {
	b := r.b
	if b != nil && !b.Closed() {
		for _, p := range batch {
			p.err = errOpen(p.code)
			close(p.done)
		}
		return
	}
	ctx := context.Background()
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	cmds := make([]*redis.IntSliceCmd, len(batch))
	vias := make([]via, len(batch))
	first := l.via(r)
	pipe := l.client.Pipeline()
	for i, p := range batch {
		switch {
		case p.gone.Load():
		case p.plain != nil:
			for _, c := range p.plain {
				_ = pipe.Process(ctx, noRetry{c})
			}
		default:
			vias[i] = first
			cmds[i] = l.script.cmd(ctx, first, p.keys, p.args)
			_ = pipe.Process(ctx, once{cmds[i]})
		}
	}
	ld := notTried
	for pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command holds its own error
		pipe = l.client.Pipeline()
		for i, c := range cmds {
			if c == nil {
				continue
			}
			if v, ok := l.again(ctx, r, vias[i], c.Err(), batch[i].keys[0], &ld); ok {
				vias[i] = v
				cmds[i] = l.script.cmd(ctx, v, batch[i].keys, batch[i].args)
				_ = pipe.Process(ctx, once{cmds[i]})
			}
		}
	}
	v, vErr := noEvidence, error(nil)
	for i, p := range batch {
		if cmds[i] != nil {
			err := cmds[i].Err()
			v, vErr = worse(v, vErr, classify(context.Background(), ctx, err), err)
			p.cmd = cmds[i]
		}
		if p.plain != nil && !p.gone.Load() {
			for _, c := range p.plain {
				v, vErr = worse(v, vErr, classify(context.Background(), ctx, c.Err()), c.Err())
			}
		}
		close(p.done)
	}
	if b != nil {
		settle(b, v, vErr, false)
	}
}

// queued reports whether every group's server batches its calls.
func queued(gs []*group) bool {
	for _, g := range gs {
		if g.r.q == nil {
			return false
		}
	}
	return true
}

// idle reports whether no call to the server of any group of gs is under
// way or waiting, and if so, adds add to each one's count of lone
// multi-server calls under way (which take none of its round trips, but
// make it busy); a negative add only counts them down (and reports true).
func idle(gs []*group, add int) bool {
	if add > 0 {
		for _, g := range gs {
			q := g.r.q
			q.mu.Lock()
			busy := q.inFlight > 0 || q.lone > 0 || len(q.waiting) > 0
			q.mu.Unlock()
			if busy {
				return false
			}
		}
	}
	for i, g := range gs {
		if slices.ContainsFunc(gs[:i], func(h *group) bool { return h.r == g.r }) {
			continue
		}
		q := g.r.q
		q.mu.Lock()
		q.lone += add
		q.mu.Unlock()
	}
	return true
}
