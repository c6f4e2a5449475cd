package redisstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/floodgate/floodgate/core"

	"github.com/floodgate/floodgate/internal/keyslot"
)

// prepared is a call's items as the script takes them, grouped by hash
// slot (one group but on a Cluster).
type prepared struct {
	groups []*group
	layers [][]*multiLayer // each item's
	fw     bool            // every layer a plain fixed window: the short form

	one  group     // the one group of a call to a single server
	ones [1]*group // groups' backing array then
}

// prepare checks items and groups them.
func (m *Multi) prepare(ctx context.Context, items []Item) (*prepared, error) {
	n := 0
	for _, it := range items {
		n += len(it.Limits)
	}
	c := &prepared{layers: make([][]*multiLayer, len(items))}
	all := make([]*multiLayer, n)
	nargs := 2              // the script's arguments, on a single server
	var logs map[string]int // a sliding log's key → its item
	for i, it := range items {
		if len(it.Limits) == 0 {
			return nil, fmt.Errorf("redisstore: Multi: item %d (key %q) has no limit", i, it.Key)
		}
		if it.Cost < 1 {
			return nil, fmt.Errorf("%w: item %d (key %q): cost must be >= 1, got %d", core.ErrInvalidCost, i, it.Key, it.Cost)
		}
		ls := all[:len(it.Limits):len(it.Limits)]
		all = all[len(it.Limits):]
		nargs += 2
		for j, l := range it.Limits {
			ly, err := m.layer(l)
			if err != nil {
				return nil, fmt.Errorf("redisstore: Multi: item %d (key %q): %w", i, it.Key, err)
			}
			if it.Cost > ly.maxCost {
				return nil, fmt.Errorf("%w: item %d (key %q): cost %d, at most %d under %s", core.ErrCostTooLarge, i, it.Key, it.Cost, ly.maxCost, l)
			}
			if ly.log {
				if logs == nil {
					logs = map[string]int{}
				}
				k := m.l.keyEnd(it.Key, ly.end)
				if prev, ok := logs[k]; ok {
					return nil, fmt.Errorf("redisstore: Multi: items %d and %d both charge the sliding log at %s; merge them into one item of their costs' sum", prev, i, k)
				}
				logs[k] = i
			}
			ls[j] = ly
			nargs += len(ly.args)
		}
		c.layers[i] = ls
	}
	c.fw = !m.generic
	for _, ls := range c.layers {
		for _, ly := range ls {
			c.fw = c.fw && ly.fw
		}
	}
	// A call of plain fixed windows only, under WithClientClockWindows,
	// runs no script: its groups need no script keys or arguments.
	plain := m.windows
	for _, ls := range c.layers {
		plain = plain && len(ls) == 1 && ls[0].fw
	}
	if m.l.masters == nil {
		g := &c.one
		g.r = m.l.one
		g.items = make([]int, 0, len(items))
		c.ones[0] = g
		c.groups = c.ones[:]
		if plain {
			for i := range items {
				g.items = append(g.items, i)
			}
			return c, nil
		}
		g.keys, g.args = make([]string, 0, n), make([]any, 2, nargs)
		for i, it := range items {
			g.add(m.l, i, it.Key, it.Cost, c.layers[i], c.fw)
		}
		return c, nil
	}
	bySlot := map[uint16]*group{}
	for i, it := range items {
		base := m.l.key(it.Key)
		g := bySlot[keyslot.Of(base)]
		if g == nil {
			g = &group{r: m.l.masters.forKey(ctx, base)}
			bySlot[keyslot.Of(base)] = g
			c.groups = append(c.groups, g)
		}
		if plain {
			g.items = append(g.items, i)
			continue
		}
		g.add(m.l, i, it.Key, it.Cost, c.layers[i], c.fw)
	}
	return c, nil
}

// probesFor claims the probe of each half-open breaker among gs's servers
// and returns their routes. When a server's breaker is open it gives back
// the probes it claimed, fails every group with that breaker's error and
// reports false: nothing is sent unless every server may be called.
func probesFor(gs []*group, code byte) ([]*route, bool) {
	var probes []*route
	for _, g := range gs {
		b := g.r.b
		if b == nil || b.Closed() || slices.Contains(probes, g.r) {
			continue
		}
		if !b.TryProbe() {
			for _, r := range probes {
				r.b.Inconclusive(true)
			}
			for _, g := range gs {
				g.err = errOpen(code)
			}
			return nil, false
		}
		probes = append(probes, g.r)
	}
	return probes, true
}
