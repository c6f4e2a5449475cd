package pipeline

import (
	"context"
	"time"
)

// Hold says how long a denial is held before it is answered: min(Max,
// the denial's RetryAfter), less if the request's context ends first.
// At most Concurrent denials are held at once; beyond that they are
// answered at once, so that holding cannot tie up the server. Max == 0
// turns holding off.
type Hold struct {
	Max        time.Duration
	Concurrent int
}

// Problem says what is wrong with h as the adapters' WithDenialHold
// options take it (Max > 0, Concurrent >= 1): "" when nothing is.
func (h Hold) Problem() string {
	switch {
	case h.Max <= 0:
		return "the hold must be positive; leave the option out to answer refusals at once"
	case h.Concurrent < 1:
		return "at least 1 refusal must be allowed to wait at once (answered at once beyond that)"
	}
	return ""
}

// hold holds a denial for min(Hold.Max, RetryAfter), unless Hold.Concurrent
// denials are held already, and records in res.Held how long it did.
func (p *Pipeline[R]) hold(ctx context.Context, res *Result) {
	d := min(p.c.Hold.Max, res.Decision.RetryAfter)
	if d <= 0 {
		return
	}
	if p.held.Add(1) > int64(p.c.Hold.Concurrent) {
		p.held.Add(-1)
		return
	}
	start := time.Now()
	if p.sleep(ctx, d) == nil {
		res.Held = d
	} else {
		res.Held = min(time.Since(start), d)
	}
	p.held.Add(-1)
}

// Sleep waits d, or until ctx ends, whichever is first; it returns ctx's
// error in the second case. It is the one context-aware wait of the module:
// shaping delays and client retries use it.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
