package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/breaker"
)

// ErrPartial is matched (errors.Is) by the store error of a Multi call
// whose keys are on several Cluster masters, one of which at least failed
// or is shut off by its breaker, while the others may answer. Nothing
// stays charged, as for any error; a caller that fails open may decide
// the items again one Limiter at a time, so that the keys on the masters
// that answer are still counted.
var ErrPartial = errors.New("redisstore: Multi: the call's keys are on several servers, and not every one answered")

// group is the items of one call that share a hash slot, sent as one
// script to the server holding it through r, its route.
type group struct {
	r     *route
	items []int    // the items' indexes in the call
	keys  []string // every layer's key, items' layers in order
	args  []any    // the script's arguments: the call's two (see head), then the items'

	cmd     *redis.IntSliceCmd
	res     []int64
	err     error
	refused bool // an item refused
	fw      bool // every layer a plain fixed window: sent in the short form
}

// allow is Allow on c, the call's items prepared.
func (m *Multi) allow(ctx context.Context, c *prepared, items []Item) ([]core.Decision, error) {
	for _, g := range c.groups {
		m.head(g, argAllow)
	}
	m.roundTrip(ctx, "allow", 'a', c.groups)
	ds := make([]core.Decision, len(items))
	var err error
	refused := false
	for _, g := range c.groups {
		if g.err == nil && len(g.res) != 5*len(g.items) {
			g.err = &core.StoreError{Op: "allow", Err: fmt.Errorf("redisstore: the multi script answered %d numbers for %d items, want 5 each", len(g.res), len(g.items))}
		}
		if g.err != nil {
			err = cmp(err, g.err)
			continue
		}
		for j, i := range g.items {
			ds[i] = decision(items[i].Limits, g.res[5*j:5*j+5])
			g.refused = g.refused || !ds[i].Allowed
		}
		refused = refused || g.refused
	}
	if len(c.groups) > 1 && (refused || err != nil) {
		// Slots that admitted were charged: give it back, even if the
		// caller has given up. A refund that fails leaves them charged,
		// which refuses more, never admits more.
		_ = m.refund(context.WithoutCancel(ctx), c, func(g *group) bool { return g.err == nil && !g.refused })
	}
	if err != nil {
		if servers(c.groups) > 1 {
			err = partial(err)
		}
		m.l.failed(ctx, err)
		return nil, err
	}
	m.l.count.store.Add(1)
	return ds, nil
}

// servers counts the distinct servers of gs.
func servers(gs []*group) int {
	n := 0
	for i, g := range gs {
		if !slices.ContainsFunc(gs[:i], func(h *group) bool { return h.r == g.r }) {
			n++
		}
	}
	return n
}

// partial marks err, a store error of a call on several servers, with
// ErrPartial.
func partial(err error) error {
	var se *core.StoreError
	if errors.As(err, &se) {
		return &core.StoreError{Op: se.Op, Err: fmt.Errorf("%w (%w)", se.Err, ErrPartial)}
	}
	return err
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// refund sends a refund of the groups of c that only accepts (all if nil).
func (m *Multi) refund(ctx context.Context, c *prepared, only func(*group) bool) error {
	var gs []*group
	for _, g := range c.groups {
		if only == nil || only(g) {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return nil
	}
	for _, g := range gs {
		m.head(g, argRefund)
	}
	m.roundTrip(ctx, "refund", 'r', gs)
	var err error
	for _, g := range gs {
		err = cmp(err, g.err)
	}
	if err != nil {
		m.l.failed(ctx, err)
	}
	return err
}

// roundTrip sends each group's script, all in one round trip (each with
// the calls to its server under way, see Limiter.submit, the servers
// concurrently; or, with batching off or a server's breaker probing, in
// one pipeline, on a Cluster one per master, concurrently) and
// sets each group's reply or error. A group whose server's breaker is open
// fails the call at once: nothing is sent unless every server may be
// called (a server's probe, when its breaker is half-open, is the call's).
// Each server's breaker then hears what its round trip showed.
func (m *Multi) roundTrip(ctx context.Context, op string, code byte, gs []*group) {
	l := m.l
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
		// One server: the call shares round trips with the others under
		// way, as a Limiter's do; submit tells the breaker.
		m.submit(ctx, op, code, g, len(probes) == 1)
		done = true
		return
	}
	if len(probes) == 0 && queued(gs) {
		// Several masters, none probing. A lone call goes at once, in one
		// pipeline; while any of its masters has other calls under way,
		// each group shares its master's round trips (Limiter.submit), the
		// masters concurrently. Either way a call waits on no master it
		// does not name: the pipeline holds none of their round trips.
		if !idle(gs, 1) {
			m.submitAll(ctx, op, code, gs)
			return
		}
		defer idle(gs, -1)
	}
	wire, cancel := breaker.Bound(ctx, l.timeout)
	if cancel != nil {
		defer cancel()
	}
	if len(gs) == 1 {
		gs[0].cmd = l.exec(wire, gs[0].r, gs[0].keys, gs[0].args)
	} else {
		m.pipeline(wire, gs)
	}
	type seen struct {
		v   verdict
		err error
	}
	byRoute := map[*route]*seen{}
	for _, g := range gs {
		err := g.cmd.Err()
		v := classify(ctx, wire, err)
		s := byRoute[g.r]
		if s == nil {
			s = &seen{v: noEvidence}
			byRoute[g.r] = s
		}
		if v == failed && s.v != failed || v == answered && s.v == noEvidence {
			s.v, s.err = v, err
		}
		if err != nil {
			g.err = &core.StoreError{Op: op, Err: err}
		} else if g.res, err = g.cmd.Result(); err != nil {
			g.err = &core.StoreError{Op: op, Err: err}
		}
	}
	done = true
	for r, s := range byRoute {
		if r.b != nil {
			settle(r.b, s.v, s.err, slices.Contains(probes, r))
		}
	}
}

// submitAll submits every group (see submit), concurrently.
func (m *Multi) submitAll(ctx context.Context, op string, code byte, gs []*group) {
	var wg sync.WaitGroup
	for _, g := range gs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.submit(ctx, op, code, g, false)
		}()
	}
	m.submit(ctx, op, code, gs[0], false)
	wg.Wait()
}

// submit sends g's script with the calls under way to its server (see
// Limiter.submit), and sets its reply or error.
func (m *Multi) submit(ctx context.Context, op string, code byte, g *group, probe bool) {
	cmd, err := m.l.submit(ctx, g.r, probe, op, code, g.keys, g.args)
	if err == nil {
		if g.res, err = cmd.Result(); err != nil {
			err = &core.StoreError{Op: op, Err: err}
		}
	}
	g.err = err
}

// pipeline sends the groups' scripts in one pipeline, again (in a pipeline
// of their own) those a server answered it did not run (see
// Limiter.again).
func (m *Multi) pipeline(ctx context.Context, gs []*group) {
	l := m.l
	vias := make([]via, len(gs))
	pipe := l.client.Pipeline()
	for i, g := range gs {
		vias[i] = l.via(g.r)
		g.cmd = l.script.cmd(ctx, vias[i], g.keys, g.args)
		_ = pipe.Process(ctx, once{g.cmd})
	}
	ld := make([]loaded, len(gs)) // a load per group's server at most
	for pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command holds its own error
		pipe = l.client.Pipeline()
		for i, g := range gs {
			if v, ok := l.again(ctx, g.r, vias[i], g.cmd.Err(), g.keys[0], &ld[i]); ok {
				vias[i] = v
				g.cmd = l.script.cmd(ctx, v, g.keys, g.args)
				_ = pipe.Process(ctx, once{g.cmd})
			}
		}
	}
}

// decision is an item's decision from its script's five numbers.
func decision(limits []core.Limit, v []int64) core.Decision {
	l := limits[min(max(v[4], 0), int64(len(limits)-1))]
	if len(limits) > 1 && l.Name == "" {
		l.Name = core.DefaultName(l) // as a Stack names its layers
	}
	d := core.Decision{Allowed: v[0] == 1, Limit: l, Remaining: int(v[1]), ResetAfter: time.Duration(v[3])}
	if d.Allowed {
		d.Delay = time.Duration(v[2])
	} else {
		d.RetryAfter = time.Duration(v[2])
	}
	return d
}
