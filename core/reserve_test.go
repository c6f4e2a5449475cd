package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func TestReserve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := coretest.NewClock(t0)
	// 10/s burst 3: a cost-1 request owes 100ms.
	lim := core.MustNew(core.PerSecond(10).WithBurst(3).WithAlgorithm(core.GCRA), core.WithClock(clk))
	remaining := func(key string) int {
		t.Helper()
		d, err := lim.Allow(ctx, key, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%s: %+v %v", key, d, err)
		}
		if err := lim.Refund(ctx, key, 1); err != nil {
			t.Fatal(err)
		}
		return d.Remaining + 1
	}

	// Cancel gives the units back, once, however many call it.
	r, d, err := core.Reserve(ctx, lim, "a", 2)
	if err != nil || !d.Allowed || d.Remaining != 1 || r == nil {
		t.Fatalf("reserve: %v %+v %v", r, d, err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.Cancel(ctx); r.Commit() }()
	}
	wg.Wait()
	if !r.Cancelled() || r.Committed() || remaining("a") != 3 {
		t.Fatalf("after cancel: cancelled=%v committed=%v remaining=%d", r.Cancelled(), r.Committed(), remaining("a"))
	}
	// A second reservation of the key is cancelled independently.
	r2, _, _ := core.Reserve(ctx, lim, "a", 1)
	r3, _, _ := core.Reserve(ctx, lim, "a", 1)
	r2.Cancel(ctx)
	if remaining("a") != 2 {
		t.Fatalf("after one of two cancelled: %d", remaining("a"))
	}
	r3.Commit()

	// Commit keeps the charge: a later Cancel gives nothing back.
	r, _, _ = core.Reserve(ctx, lim, "b", 3)
	if !r.Commit() || r.Commit() {
		t.Fatal("Commit did not settle once")
	}
	if err := r.Cancel(ctx); err != nil || r.Cancelled() {
		t.Fatal("Cancel after Commit", err)
	}
	if d, _ := lim.Allow(ctx, "b", 1); d.Allowed {
		t.Fatalf("b refunded after Commit: %+v", d)
	}

	// A refused request reserves nothing: a nil Reservation, settled by no one.
	r, d, err = core.Reserve(ctx, lim, "b", 1)
	if r != nil || d.Allowed || err != nil {
		t.Fatalf("refused: %v %+v %v", r, d, err)
	}
	if r.Commit() || r.Cancel(ctx) != nil || r.Committed() || r.Cancelled() {
		t.Fatal("a nil Reservation settled")
	}
	if r, _, err := core.Reserve(ctx, lim, "b", 0); r != nil || !errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("cost 0: %v %v", r, err)
	}
}

// refundFails admits everything and fails every refund.
type refundFails struct{ refunds int }

func (f *refundFails) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Allowed: true}, nil
}

func (f *refundFails) Refund(context.Context, string, int) error {
	f.refunds++
	return &core.StoreError{Op: "refund", Err: errors.New("down")}
}

func TestReserveCancelError(t *testing.T) {
	t.Parallel()
	f := &refundFails{}
	r, _, _ := core.Reserve(context.Background(), f, "k", 1)
	if err := r.Cancel(context.Background()); !errors.Is(err, core.ErrStore) {
		t.Fatalf("Cancel: %v", err)
	}
	if err := r.Cancel(context.Background()); err != nil || f.refunds != 1 || !r.Cancelled() {
		t.Fatalf("second Cancel: %v, %d refunds", err, f.refunds)
	}
}
