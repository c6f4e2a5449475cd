package redisstore

import (
	"math"
	"strings"

	"github.com/floodgate/floodgate/core"
)

// A leasing Multi's leasers: a Limiter (one limit) or a Stack (several)
// per distinct limits of its items, made with its options (multi_quota.go).

// leaser returns the Limiter or Stack's Limiter that leases units of
// ls, the layers of an item's limits, made on first use; nil when the
// limits cannot be leased.
func (m *Multi) leaser(limits []core.Limit, ls []*multiLayer) *Limiter {
	mq := m.quota
	var id string
	if len(ls) == 1 {
		id = ls[0].end
	} else {
		var b strings.Builder
		for _, ly := range ls {
			b.WriteString(ly.end)
			b.WriteByte('|')
		}
		id = b.String()
	}
	mq.mu.RLock()
	l, ok := mq.by[id]
	mq.mu.RUnlock()
	if ok {
		return l
	}
	mq.mu.Lock()
	defer mq.mu.Unlock()
	if l, ok := mq.by[id]; ok {
		return l
	}
	opts := append(mq.opts[:len(mq.opts):len(mq.opts)], WithDenyCache(0))
	if len(limits) == 1 {
		if lim, err := New(mq.client, limits[0], opts...); err == nil {
			l = lim
		}
	} else if s, err := NewStack(mq.client, limits, opts...); err == nil {
		l = s.l
	}
	mq.by[id] = l
	return l
}

// leasable returns it's leaser when it can be decided from a lease: its
// limits can be leased, and its cost is one they admit; nil otherwise
// (the call goes to Redis, where prepare reports what is wrong).
func (m *Multi) leasable(it Item) *Limiter {
	n := len(it.Limits)
	if n == 0 || it.Cost < 1 {
		return nil
	}
	var k knownLimits
	if n <= len(k.ls) {
		k.n = n
		copy(k.ls[:], it.Limits)
		m.quota.mu.RLock()
		e, ok := m.quota.known[k]
		m.quota.mu.RUnlock()
		if ok {
			if e.l == nil || it.Cost > e.maxCost {
				return nil
			}
			return e.l
		}
	}
	var buf [4]*multiLayer
	ls := buf[:0]
	most := math.MaxInt
	for _, lim := range it.Limits {
		ly, err := m.layer(lim)
		if err != nil {
			return nil
		}
		ls = append(ls, ly)
		most = min(most, ly.maxCost)
	}
	l := m.leaser(it.Limits, ls)
	if l != nil {
		most = min(most, l.pol.maxCost)
	}
	if k.n > 0 {
		m.quota.mu.Lock()
		m.quota.known[k] = known{l: l, maxCost: most}
		m.quota.mu.Unlock()
	}
	if l == nil || it.Cost > most {
		return nil
	}
	return l
}

// knownLimits are an item's limits, as given, when it has at most 4.
type knownLimits struct {
	n  int
	ls [4]core.Limit
}

// known is the leaser of known limits (nil: they cannot be leased) and the
// largest cost they admit.
type known struct {
	l       *Limiter
	maxCost int
}
