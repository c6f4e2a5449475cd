package redisstore

import (
	"context"
	"fmt"

	"github.com/floodgate/floodgate/core"
)

// errClientWindowsQuota refuses WithClientClockWindows with WithLocalQuota
// in the constructor ctor.
func errClientWindowsQuota(ctor string) error {
	return fmt.Errorf("redisstore: %s: WithClientClockWindows and WithLocalQuota cannot be combined: the leases are taken from the script's keys, which the pipelined windows do not read; drop one of them", ctor)
}

// errClientWindowsLimit refuses WithClientClockWindows on New for l.
func errClientWindowsLimit(l core.Limit, quota bool) error {
	if quota {
		return errClientWindowsQuota("New")
	}
	return fmt.Errorf("redisstore: New: WithClientClockWindows charges a plain core.FixedWindow only, and %s is %v; drop the option or use a fixed window", l, l.Algorithm)
}

// windowGroup is the one group of a Limiter's pipelined call for key: the
// route of the server that holds it.
func (l *Limiter) windowGroup(ctx context.Context, key string) []*group {
	return []*group{{r: l.routeOf(ctx, key), items: []int{0}}}
}

// routeOf is the route of the server that holds key.
func (l *Limiter) routeOf(ctx context.Context, key string) *route {
	if l.masters != nil {
		return l.masters.forKey(ctx, l.key(key))
	}
	return l.one
}

// windowItem is key's charge of cost as the pipelined call's one item.
func (l *Limiter) windowItem(key string, cost int) []Item {
	return []Item{{Key: key, Limits: l.windows, Cost: cost}}
}

// allowWindow is Allow's round trip for a Limiter made
// WithClientClockWindows: its fixed window charged by pipelined commands,
// as a Multi charges an item, and the refusal kept in the deny cache as
// the script's would be (start and mark: see allow).
func (l *Limiter) allowWindow(ctx context.Context, p *policy, key string, cost int, start int64, mark uint64) (core.Decision, error) {
	ds, err := l.allowWindows(ctx, l.windowGroup(ctx, key), l.windowItem(key, cost))
	if err != nil {
		return l.allowLocal(ctx, key, cost, err)
	}
	d := ds[0]
	if l.deny != nil && cost == 1 && !d.Allowed {
		l.deny.keep(mark, key, p, start+int64(d.RetryAfter), start+int64(d.ResetAfter), 0)
	}
	return d, nil
}

// baseKeyEnd is the base key of key (the prefix, then key in braces, as
// a Multi's keys start) + end, whatever l's own suffix: a Limiter's and a
// Multi's windows of one key and limit are one key.
func (l *Limiter) baseKeyEnd(key, end string) string {
	if ordinary(key) {
		return l.prefix + key + "}" + end
	}
	k := l.key(key)
	return k[:len(k)-len(l.suffix)] + "}" + end
}
