package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// WithClientClockWindows charges plain fixed windows (core.FixedWindow)
// as envoyproxy/ratelimit does: per key an INCRBY of the cost and a
// PEXPIRE, the window named in the key by its index on this process's
// clock, and no script. It is an option of New (of a plain fixed window)
// and of NewMulti. A Multi sends a call's fixed windows in one pipeline;
// only if an item is refused does one more give every key its charge back
// (DECRBY), so the call stays all or nothing. Its other items (other
// algorithms, stacks) go to the script, at the same time, under a
// Limiter's or a Stack's keys, and either side takes back its charges
// when the other refuses. A Limiter and a Multi made with the option keep
// a key's window in one place. Redis runs no script for a fixed window,
// which costs it several times less.
//
// The trade-offs. Window boundaries follow the clock of each process
// (core.SystemClock, or a test's clock), not the server's TIME: processes
// whose clocks differ shift their windows by the difference, and a count
// may then be split across two windows near a boundary, as upstream's
// are. A refused call's units on the other keys are held until its refund
// lands: a concurrent call may be refused in that gap, never admitted
// over a limit. The keys are new (the window index ends them): a window
// the script kept (a Limiter's or a Multi's without the option) is not
// read, and expires by its TTL, so a limiter that takes the option
// forgets the current window's count once. NewStack, NewDynamic (whose
// keys keep their count across a change of limit) and WithLocalQuota
// (whose leases are the script's) refuse it.
func WithClientClockWindows() Option { return func(o *options) { o.clientWindows = true } }

var errClientWindows = errors.New("redisstore: WithClientClockWindows is an option of New (of a plain core.FixedWindow) and NewMulti only; a Stack or a Dynamic keeps the script's keys")

// refundScript gives back up to ARGV[1] units of a window's count, never
// below zero and never making a key: Refund's, whose charge may be gone.
const refundScript = "local v = tonumber(redis.call('GET', KEYS[1]) or '0') if v > 0 then redis.call('DECRBY', KEYS[1], math.min(v, tonumber(ARGV[1]))) end return 0"

// splitWindows returns the items of c, the call of items, that the pipelined
// commands charge (one plain fixed window each) and those the script
// decides (every other).
func splitWindows(c *prepared, items []Item) (win, scr []int) {
	for i, it := range items {
		if len(it.Limits) == 1 && c.layers[i][0].fw {
			win = append(win, i)
		} else {
			scr = append(scr, i)
		}
	}
	return win, scr
}

// window is one key's part of a pipelined call.
type window struct {
	key      string
	cost     int64
	end, ttl int64 // the window's end in ns; the key's TTL in ms
	incr     *redis.IntCmd
}

// noRetry is a command go-redis must not send again after a failure (a
// reply lost after Redis ran it): a charge or a refund sent twice would
// count twice. One in a pipeline keeps go-redis from resending any of it.
type noRetry struct{ redis.Cmder }

// NoRetry tells go-redis not to send the command again.
func (noRetry) NoRetry() bool { return true }

// windowsAt names each item's window key at now and its TTL.
func (l *Limiter) windowsAt(items []Item, now int64) []window {
	margin, _ := strconv.ParseInt(l.margins.pick().(string), 10, 64)
	ws := make([]window, len(items))
	for i, it := range items {
		k, end := l.windowKey(it.Key, it.Limits[0], now)
		ws[i] = window{key: k, cost: int64(it.Cost), end: end, ttl: (end-now+999_999)/1_000_000 + margin}
	}
	return ws
}

// windowKey returns the key of key's window of l at now and the window's
// end: the client key, then '#', l's events and period, and the window's
// index, all in base 36. Short keys cost Redis less (hashing, parsing);
// the '#' keeps them apart from the scripts' keys, whose ends start with
// an algorithm's letters.
func (l *Limiter) windowKey(key string, lim core.Limit, now int64) (string, int64) {
	period := int64(lim.Period)
	idx := now / period
	if now%period < 0 {
		idx--
	}
	var b [40]byte
	e := append(b[:0], ":#"...)
	e = strconv.AppendInt(e, int64(lim.Events), 36)
	e = append(e, '/')
	e = strconv.AppendInt(e, period, 36)
	e = append(e, ':')
	e = strconv.AppendInt(e, idx, 36)
	return l.baseKeyEnd(key, string(e)), (idx + 1) * period
}

// now is the instant of a pipelined call: the test's script clock if set,
// else the process's clock.
func (l *Limiter) now() int64 {
	if l.testNow != nil {
		return l.testNow.Now()
	}
	return l.clock.Now()
}

// allowWindows charges items, grouped by server in gs, by pipelined
// commands (WithClientClockWindows), all or nothing. A store failure is
// returned, not yet counted (see failed).
func (l *Limiter) allowWindows(ctx context.Context, gs []*group, items []Item) ([]core.Decision, error) {
	now := l.now()
	ws := l.windowsAt(items, now)
	l.sendWindows(ctx, "allow", 'a', gs, func(add func(redis.Cmder), g *group) {
		for _, i := range g.items {
			w := &ws[i]
			w.incr = redis.NewIntCmd(ctx, "incrby", w.key, w.cost)
			add(w.incr)
			add(redis.NewBoolCmd(ctx, "pexpire", w.key, w.ttl))
		}
	})
	ds := make([]core.Decision, len(items))
	var err error
	refused := false
	for _, g := range gs {
		if g.err != nil {
			err = cmp(err, g.err)
			continue
		}
		for k, i := range g.items {
			w, lim := &ws[i], items[i].Limits[0]
			n := w.incr.Val()
			for _, j := range g.items[:k] {
				// A key named twice: its INCRBYs count in turn, as the
				// script does, but an item does not see the charge of an
				// earlier one that refused.
				if ws[j].key == w.key && !ds[j].Allowed {
					n -= ws[j].cost
				}
			}
			d := core.Decision{Allowed: n <= int64(lim.Events), Limit: lim, ResetAfter: time.Duration(w.end - now)}
			if d.Allowed {
				d.Remaining = lim.Events - int(n)
			} else {
				d.Remaining, d.RetryAfter = max(0, lim.Events-int(n-w.cost)), d.ResetAfter
				refused = true
			}
			ds[i] = d
		}
	}
	if refused || err != nil {
		// Every charged key gives its charge back, even if the caller has
		// given up; a refund that fails leaves it charged, which refuses
		// more, never admits more. The PEXPIRE keeps a TTL on a key the
		// DECRBY would make, were it gone.
		var charged []*group
		for _, g := range gs {
			if g.err == nil {
				charged = append(charged, g)
			}
		}
		if len(charged) > 0 {
			bg := context.WithoutCancel(ctx)
			l.sendWindows(bg, "refund", 'r', charged, func(add func(redis.Cmder), g *group) {
				for _, i := range g.items {
					add(redis.NewIntCmd(bg, "decrby", ws[i].key, ws[i].cost))
					add(redis.NewBoolCmd(bg, "pexpire", ws[i].key, ws[i].ttl))
				}
			})
		}
	}
	if err != nil {
		if servers(gs) > 1 {
			err = partial(err)
		}
		return nil, err
	}
	l.count.store.Add(1)
	return ds, nil
}

// refundWindows gives items back by pipelined scripts of one key each
// (refundScript): the current window's count of each item, never below 0.
// A store failure is returned, not yet counted.
func (l *Limiter) refundWindows(ctx context.Context, gs []*group, items []Item) error {
	ws := l.windowsAt(items, l.now())
	l.sendWindows(ctx, "refund", 'r', gs, func(add func(redis.Cmder), g *group) {
		for _, i := range g.items {
			add(redis.NewCmd(ctx, "eval", refundScript, 1, ws[i].key, ws[i].cost))
		}
	})
	var err error
	for _, g := range gs {
		err = cmp(err, g.err)
	}
	return err
}

// sendWindows sends the commands queue puts for each group in one
// pipeline (on a Cluster, go-redis sends each master its part,
// concurrently) and sets each group's error. As roundTrip: a group whose
// server's breaker is open fails the call at once, and each server's
// breaker hears what its commands showed.
func (l *Limiter) sendWindows(ctx context.Context, op string, code byte, gs []*group, queue func(add func(redis.Cmder), g *group)) {
	for _, g := range gs {
		g.err = nil
	}
	probes, ok := probesFor(gs, code)
	if !ok {
		return
	}
	done := false
	defer func() {
		if !done { // a client that panics must not keep a probe
			for _, r := range probes {
				r.b.Inconclusive(true)
			}
		}
	}()
	if g := gs[0]; len(gs) == 1 && g.r.q != nil {
		// One server that batches: the commands share its round trips
		// with the calls under way, as a script's do; submitPlain tells
		// the breaker.
		cmds := make([]redis.Cmder, 0, 2*len(g.items))
		queue(func(c redis.Cmder) { cmds = append(cmds, c) }, g)
		g.err = l.submitPlain(ctx, g.r, len(probes) == 1, op, code, cmds)
		done = true
		return
	}
	wire, cancel := breaker.Bound(ctx, l.timeout)
	if cancel != nil {
		defer cancel()
	}
	pipe := l.client.Pipeline()
	from := make([]int, len(gs)+1) // group k's commands: cmds[from[k]:from[k+1]]
	for k, g := range gs {
		from[k] = pipe.Len()
		queue(func(c redis.Cmder) { _ = pipe.Process(ctx, noRetry{c}) }, g)
	}
	from[len(gs)] = pipe.Len()
	cmds, _ := pipe.Exec(wire) // each command holds its own error
	type seen struct {
		v   verdict
		err error
	}
	byRoute := map[*route]*seen{}
	for k, g := range gs {
		s := byRoute[g.r]
		if s == nil {
			s = &seen{v: noEvidence}
			byRoute[g.r] = s
		}
		for _, cmd := range cmds[from[k]:from[k+1]] {
			err := cmd.Err()
			if v := classify(ctx, wire, err); v == failed && s.v != failed || v == answered && s.v == noEvidence {
				s.v, s.err = v, err
			}
			if err != nil && g.err == nil {
				g.err = &core.StoreError{Op: op, Err: err}
			}
		}
	}
	done = true
	for r, s := range byRoute {
		if r.b != nil {
			settle(r.b, s.v, s.err, slices.Contains(probes, r))
		}
	}
}
