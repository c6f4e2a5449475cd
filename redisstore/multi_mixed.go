package redisstore

import (
	"context"

	"github.com/floodgate/floodgate/core"
)

// A Multi made WithClientClockWindows charges an item of one plain fixed
// window by pipelined commands, under the window's key, whatever the
// call's other items: a Limiter made WithClientClockWindows keeps the
// key's state there too, so that every call of the key counts in one
// place. The call's other items (other algorithms, stacks) go to the
// script, under a Limiter's or a Stack's keys. A call of both sends both
// at once and takes back, when either refuses or fails, what the other
// charged, as a call across Cluster slots does.

// subCall is the items of items at idx, prepared.
func (m *Multi) subCall(ctx context.Context, items []Item, idx []int) (*prepared, []Item, error) {
	sub := make([]Item, len(idx))
	for k, i := range idx {
		sub[k] = items[i]
	}
	c, err := m.prepare(ctx, sub)
	return c, sub, err
}

// allowMixed is Allow on c when win, of items, are plain fixed windows
// and scr the others (maybe none).
func (m *Multi) allowMixed(ctx context.Context, c *prepared, items []Item, win, scr []int) ([]core.Decision, error) {
	l := m.l
	if len(scr) == 0 {
		ds, err := l.allowWindows(ctx, c.groups, items)
		if err != nil {
			l.failed(ctx, err)
		}
		return ds, err
	}
	wc, wi, err := m.subCall(ctx, items, win)
	if err != nil {
		return nil, err
	}
	sc, si, err := m.subCall(ctx, items, scr)
	if err != nil {
		return nil, err
	}
	var sds []core.Decision
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		sds, serr = m.allow(ctx, sc, si)
	}()
	wds, werr := l.allowWindows(ctx, wc.groups, wi)
	<-done
	// Each side gave back its own charges if one of its items refused (or,
	// on a Cluster, if one of its slots failed); a side that admitted
	// every item gives them back if the other did not.
	wOK, sOK := werr == nil && admitted(wds), serr == nil && admitted(sds)
	bg := context.WithoutCancel(ctx)
	if wOK && !sOK {
		if err := l.refundWindows(bg, wc.groups, wi); err != nil {
			l.failed(bg, err)
		}
	}
	if sOK && !wOK {
		_ = m.refund(bg, sc, nil)
	}
	switch {
	case werr != nil:
		l.failed(ctx, werr)
		return nil, werr
	case serr != nil: // m.allow counted it
		return nil, serr
	}
	l.count.store.Add(^uint64(0)) // one decision, which both sides counted
	ds := make([]core.Decision, len(items))
	for k, i := range win {
		ds[i] = wds[k]
	}
	for k, i := range scr {
		ds[i] = sds[k]
	}
	return ds, nil
}

// admitted reports whether every decision of ds admits.
func admitted(ds []core.Decision) bool {
	for _, d := range ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// refundMixed is Refund on c when win, of items, are plain fixed windows
// and scr the others (maybe none): both sides at once.
func (m *Multi) refundMixed(ctx context.Context, c *prepared, items []Item, win, scr []int) error {
	l := m.l
	if len(scr) == 0 {
		err := l.refundWindows(ctx, c.groups, items)
		if err != nil {
			l.failed(ctx, err)
		}
		return err
	}
	wc, wi, err := m.subCall(ctx, items, win)
	if err != nil {
		return err
	}
	sc, _, err := m.subCall(ctx, items, scr)
	if err != nil {
		return err
	}
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		serr = m.refund(ctx, sc, nil)
	}()
	werr := l.refundWindows(ctx, wc.groups, wi)
	<-done
	if werr != nil {
		l.failed(ctx, werr)
	}
	return cmp(werr, serr)
}
