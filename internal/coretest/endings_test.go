package coretest_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestEndings: every decision admits, with a lease that records its
// ending once; Take hands the endings over in order and starts afresh;
// leases ended from many goroutines are all recorded (run with -race).
func TestEndings(t *testing.T) {
	t.Parallel()
	var lim coretest.Endings
	ctx := context.Background()
	for _, e := range []core.Ending{core.EndDropped, core.EndDone, core.EndIgnored} {
		d, err := lim.Allow(ctx, "k", 1)
		if err != nil || !d.Allowed || d.Lease.IsZero() {
			t.Fatalf("Allow = %+v, %v; want admitted with a lease", d, err)
		}
		d.Lease.End(ctx, e)
		d.Lease.End(ctx, core.EndDone) // a lease ends once
	}
	if got, want := lim.Take(), []core.Ending{core.EndDropped, core.EndDone, core.EndIgnored}; !slices.Equal(got, want) {
		t.Fatalf("Take = %v, want %v", got, want)
	}
	if got := lim.Take(); len(got) != 0 {
		t.Fatalf("a second Take = %v, want none", got)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				d, _ := lim.Allow(ctx, "k", 1)
				d.Lease.End(ctx, core.EndDone)
			}
		})
	}
	wg.Wait()
	if got := lim.Take(); len(got) != 800 {
		t.Fatalf("%d endings from 8 goroutines, want 800", len(got))
	}
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatalf("Refund: %v", err)
	}
}
