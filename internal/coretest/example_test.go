package coretest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func ExampleClock() {
	clock := coretest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	clock.Advance(90 * time.Second)
	fmt.Println(clock.Time().UTC().Format(time.TimeOnly), clock.Now())
	// Output: 03:05:35 1767323135000000000
}

// A store that is down: every decision fails with a core.ErrStore error,
// which adapters answer by their failure mode and never show the client.
func ExampleStoreDown() {
	lim := coretest.StoreDown(errors.New("redis at 10.0.0.7: connection refused"))
	_, err := lim.Allow(context.Background(), "alice", 1)
	fmt.Println(errors.Is(err, core.ErrStore))
	fmt.Println(err)
	// Output:
	// true
	// core: store allow: redis at 10.0.0.7: connection refused
}

// A limiter whose leases record how each request ended, for testing that
// an adapter ends every lease it is given as it should.
func ExampleEndings() {
	var lim coretest.Endings
	d, _ := lim.Allow(context.Background(), "alice", 1)
	d.Lease.End(context.Background(), core.EndDropped) // what an adapter does when the request ends
	got := lim.Take()
	fmt.Println(len(got), got[0] == core.EndDropped)
	// Output: 1 true
}
