package core_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// SetLimit changes the limit of every key at once; keys keep what they
// have spent (GCRA: the time they owe).
func ExampleKeyed_SetLimit() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim := core.MustNew(core.PerSecond(10).WithAlgorithm(core.GCRA), core.WithClock(clock))
	ctx := context.Background()
	d, _ := lim.Allow(ctx, "k", 8)
	fmt.Println("10/s: remaining", d.Remaining)
	if err := lim.SetLimit(core.PerSecond(10).WithBurst(20).WithAlgorithm(core.GCRA)); err != nil {
		panic(err)
	}
	d, _ = lim.Allow(ctx, "k", 1)
	fmt.Println("burst 20: remaining", d.Remaining, "under", d.Limit)
	// Output:
	// 10/s: remaining 2
	// burst 20: remaining 11 under 10/s burst=20 algorithm=gcra
}

// Tiers of API keys: each key's limit is chosen per request, and a key that
// upgrades keeps what it has spent.
func ExampleNewDynamic() {
	clock := coretest.NewClock(time.Unix(0, 0))
	free := core.PerMinute(3).WithName("free").WithAlgorithm(core.GCRA)
	paid := core.PerMinute(10).WithName("paid").WithAlgorithm(core.GCRA)
	upgraded := map[string]bool{}
	lim, err := core.NewDynamic(func(key string) core.Limit {
		if strings.HasPrefix(key, "paid-") || upgraded[key] {
			return paid
		}
		return free
	}, core.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, key := range []string{"alice", "paid-bob"} {
		d, _ := lim.Allow(ctx, key, 3)
		fmt.Printf("%s: %s, remaining %d\n", key, d.Limit.Name, d.Remaining)
	}
	upgraded["alice"] = true // not safe for concurrent use; a real table would lock
	d, _ := lim.Allow(ctx, "alice", 1)
	fmt.Printf("alice upgraded: %s, remaining %d\n", d.Limit.Name, d.Remaining)
	// Output:
	// alice: free, remaining 0
	// paid-bob: paid, remaining 7
	// alice upgraded: paid, remaining 0
}

// The limit follows a load signal between two bounds; tests call Update
// instead of waiting for the background sampler.
func ExampleNewAdaptive() {
	heapInUse := 0.0 // a fraction of the budget; runtime/metrics in real code
	lim, err := core.NewAdaptive(core.AdaptiveConfig{
		Low: core.PerSecond(100), High: core.PerSecond(1000),
		Signal:  func() float64 { return heapInUse },
		LowMark: 0.5, HighMark: 0.9,
	})
	if err != nil {
		panic(err)
	}
	defer lim.Close()
	for _, h := range []float64{0.2, 0.7, 0.95} {
		heapInUse = h
		l, _ := lim.Update()
		fmt.Printf("heap %.2f: %d/s\n", h, l.Events)
	}
	// Output:
	// heap 0.20: 1000/s
	// heap 0.70: 550/s
	// heap 0.95: 100/s
}

// Reserve a frequency cap's unit before the auction; keep it only for the
// ad actually shown.
func ExampleReserve() {
	clock := coretest.NewClock(time.Unix(0, 0))
	capPerUser := core.MustNew(core.PerHour(2).WithAlgorithm(core.GCRA), core.WithClock(clock))
	ctx := context.Background()
	for _, shown := range []bool{false, true, true, true} {
		r, d, err := core.Reserve(ctx, capPerUser, "user-1", 1)
		if err != nil || !d.Allowed {
			fmt.Println("capped, retry after", d.RetryAfter)
			continue
		}
		if shown {
			r.Commit()
			fmt.Println("shown")
		} else {
			r.Cancel(ctx)
			fmt.Println("lost the auction: refunded")
		}
	}
	// Output:
	// lost the auction: refunded
	// shown
	// shown
	// capped, retry after 30m0s
}
