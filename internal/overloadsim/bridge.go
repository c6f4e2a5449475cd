package overloadsim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// Bridge drives a core.Limiter as a Controller, on a fake clock that the
// simulator sets to each event's time: this is how floodgate's own
// limiters run in the same tables as the anchors.
type Bridge struct {
	// New makes the limiter, reading the time from clock; env is the
	// run's (Env.CPU is the server's CPU signal, for a limiter that
	// sheds on CPU).
	New func(clock core.Clock, env *Env) (core.Limiter, error)
	// Key is the key a request is decided under (nil: its tenant).
	Key func(r *Request) string
	// Limit reads the limiter's current limit for the tables (nil: the
	// Events of the last decision's Limit, or +Inf before the first). It
	// is called only after New, on the same run, so it may read a
	// limiter New kept in a variable:
	//
	//	var a *overload.Adaptive
	//	b := Bridge{
	//		New:   func(c core.Clock, _ *Env) (core.Limiter, error) { ...; a, err = overload.NewAdaptive(cfg); return a, err },
	//		Limit: func() float64 { return float64(a.Limit()) },
	//	}
	Limit func() float64
}

// bridgeEpoch is the fake clock's reading at the start of a run.
var bridgeEpoch = time.Unix(1_800_000_000, 0)

// Factory returns the Factory of the bridge's controller. Each request
// is asked for with Allow(overload.NewContext(ctx, its priority), its
// key, 1); an admission's Lease is ended with core.EndDone, or
// core.EndDropped when the request missed its deadline; a refusal is shed.
// An error from Allow or End ends the run with it.
func (b Bridge) Factory() Factory {
	return func(env *Env) (Controller, error) {
		if b.New == nil {
			return nil, fmt.Errorf("overloadsim: Bridge.New is nil")
		}
		clock := coretest.NewClock(bridgeEpoch)
		lim, err := b.New(clock, env)
		if err != nil {
			return nil, err
		}
		return &bridged{b: b, lim: lim, clock: clock, last: math.Inf(1), ctxs: map[overload.Priority]context.Context{}}, nil
	}
}

type bridged struct {
	b      Bridge
	lim    core.Limiter
	clock  *coretest.Clock
	leases []core.Lease // by slot; Request.Tag is the slot + 1
	free   []int64
	last   float64
	err    error
	// ctxs holds a context per priority, made once.
	ctxs map[overload.Priority]context.Context
}

func (c *bridged) at(now int64) {
	c.clock.Set(bridgeEpoch.Add(time.Duration(now)))
}

func (c *bridged) Admit(now int64, r *Request) bool {
	if c.err != nil {
		return false
	}
	c.at(now)
	key := r.Tenant
	if c.b.Key != nil {
		key = c.b.Key(r)
	}
	ctx, ok := c.ctxs[r.Priority]
	if !ok {
		ctx = overload.NewContext(context.Background(), r.Priority)
		c.ctxs[r.Priority] = ctx
	}
	d, err := c.lim.Allow(ctx, key, 1)
	if err != nil {
		c.err = fmt.Errorf("overloadsim: Allow at %v: %w", time.Duration(now), err)
		return false
	}
	if d.Limit.Events > 0 {
		c.last = float64(d.Limit.Events)
	}
	if !d.Allowed {
		return false
	}
	var slot int64
	if n := len(c.free); n > 0 {
		slot, c.free = c.free[n-1], c.free[:n-1]
		c.leases[slot] = d.Lease
	} else {
		slot = int64(len(c.leases))
		c.leases = append(c.leases, d.Lease)
	}
	r.Tag = slot + 1
	return true
}

func (c *bridged) Done(now int64, r *Request, _ time.Duration, dropped bool) {
	if r.Tag == 0 {
		return
	}
	slot := r.Tag - 1
	l := c.leases[slot]
	c.leases[slot] = core.Lease{}
	c.free = append(c.free, slot)
	c.at(now)
	e := core.EndDone
	if dropped {
		e = core.EndDropped
	}
	if err := l.End(context.Background(), e); err != nil && c.err == nil {
		c.err = fmt.Errorf("overloadsim: Lease.End at %v: %w", time.Duration(now), err)
	}
}

func (c *bridged) Limit(now int64) float64 {
	if c.b.Limit != nil {
		c.at(now)
		return c.b.Limit()
	}
	return c.last
}

// Err is the first error of the limiter; Run returns it.
func (c *bridged) Err() error { return c.err }
