package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
)

// splitMulti is the Multi of two Redis: charges of per-second limits go
// to second, the others to other. A call whose charges are all on one
// goes there alone; a call on both is decided on both at once and stays
// all or nothing: when one side refuses (or fails) and the other
// admitted, what the other charged is refunded, as a Cluster's Multi
// refunds the slots that admitted. Between the charge and its refund
// another request may find those keys short of the refunded units.
type splitMulti struct{ other, second rls.Multi }

// half is one side's share of a split call: its charges and where they
// are in the call.
type half struct {
	charges []rls.Charge
	at      []int
	ds      []core.Decision
	err     error
}

func (h *half) admitted() bool {
	if h.err != nil {
		return false
	}
	for _, d := range h.ds {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// split divides cs between the per-second side and the other; n is how
// many are per second.
func split(cs []rls.Charge) (sec, oth half, n int) {
	for _, c := range cs {
		if perSecond(c.Limits) {
			n++
		}
	}
	if n == 0 || n == len(cs) {
		return sec, oth, n
	}
	for i, c := range cs {
		h := &oth
		if perSecond(c.Limits) {
			h = &sec
		}
		h.charges, h.at = append(h.charges, c), append(h.at, i)
	}
	return sec, oth, n
}

func (m splitMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	sec, oth, n := split(cs)
	switch n {
	case 0:
		return m.other.AllowAll(ctx, cs)
	case len(cs):
		return m.second.AllowAll(ctx, cs)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sec.ds, sec.err = m.second.AllowAll(ctx, sec.charges)
	}()
	oth.ds, oth.err = m.other.AllowAll(ctx, oth.charges)
	<-done
	secOK, othOK := sec.admitted(), oth.admitted()
	if secOK != othOK {
		// One side charged, the other did not: give the charged side's
		// units back, so that the call charges nothing, as refused calls
		// do. If that refund fails, the units stay charged until their
		// keys expire: the limits err towards refusing.
		if secOK {
			_ = m.second.RefundAll(ctx, sec.charges)
		} else {
			_ = m.other.RefundAll(ctx, oth.charges)
		}
	}
	switch {
	case sec.err != nil && oth.err != nil:
		return nil, errors.Join(sec.err, oth.err)
	case sec.err != nil || oth.err != nil:
		err := errors.Join(sec.err, oth.err)
		if errors.Is(err, core.ErrStore) {
			// One Redis answered: under FailOpen the service decides the
			// request again a limiter at a time, and the answering Redis
			// still counts it.
			err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
		}
		return nil, err
	}
	ds := make([]core.Decision, len(cs))
	for _, h := range []*half{&sec, &oth} {
		for j, i := range h.at {
			ds[i] = h.ds[j]
		}
	}
	return ds, nil
}

func (m splitMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	sec, oth, n := split(cs)
	switch n {
	case 0:
		return m.other.RefundAll(ctx, cs)
	case len(cs):
		return m.second.RefundAll(ctx, cs)
	}
	return errors.Join(m.second.RefundAll(ctx, sec.charges), m.other.RefundAll(ctx, oth.charges))
}
