package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

var (
	free = core.PerMinute(3).WithName("free").WithAlgorithm(core.GCRA)
	paid = core.PerMinute(10).WithName("paid").WithAlgorithm(core.GCRA)
)

func tierOf(key string) core.Limit {
	if strings.HasPrefix(key, "paid:") {
		return paid
	}
	return free
}

func TestDynamicTiers(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	lim, err := core.NewDynamic(tierOf, core.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		key       string
		n         int
		limit     core.Limit
		remaining int
	}{{"free:a", 3, free, 0}, {"paid:b", 3, paid, 7}, {"free:c", 1, free, 2}} {
		var d core.Decision
		for i := 0; i < tc.n; i++ {
			if d, err = lim.Allow(ctx, tc.key, 1); err != nil || !d.Allowed {
				t.Fatalf("%s request %d: %+v %v", tc.key, i, d, err)
			}
		}
		if d.Limit != tc.limit || d.Remaining != tc.remaining {
			t.Errorf("%s: limit %v remaining %d, want %v %d", tc.key, d.Limit, d.Remaining, tc.limit, tc.remaining)
		}
	}
	if d, _ := lim.Allow(ctx, "free:a", 1); d.Allowed || d.RetryAfter != 20*time.Second || d.Limit != free {
		t.Errorf("free:a's 4th: %+v", d)
	}
	if got := lim.Limits(); len(got) != 2 || got[0] != free || got[1] != paid {
		t.Errorf("Limits() = %v", got)
	}
	if lim.Len() != 3 {
		t.Errorf("Len() = %d, want 3", lim.Len())
	}
}

// oneKey is a limit function whose answer the test sets.
type oneKey struct{ l atomic.Pointer[core.Limit] }

func (o *oneKey) limitOf(string) core.Limit { return *o.l.Load() }
func (o *oneKey) set(l core.Limit) error    { o.l.Store(&l); return nil }

// TestDynamicCarriesState plays the limit-change tables on a Dynamic
// limiter, changing the key's limit instead of the limiter's: the key's
// state moves between tables and every decision is the one SetLimit gives.
func TestDynamicCarriesState(t *testing.T) {
	t.Parallel()
	for _, tab := range changeTables() {
		for _, cache := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cache=%v", tab.name, cache), func(t *testing.T) {
				clk := coretest.NewClock(t0)
				var o oneKey
				o.set(tab.first)
				lim, err := core.NewDynamic(o.limitOf, append([]core.Option{core.WithClock(clk), core.WithDenyCache(cache)}, tab.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				playChanges(t, clk, lim, o.set, tab.first, tab.steps)
				if lim.Len() != 1 {
					t.Errorf("the key is in %d tables", lim.Len())
				}
			})
		}
	}
}

// TestDynamicRefundMoves: a refund under the key's new limit finds the
// state charged under the old one.
func TestDynamicRefundMoves(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(t0)
	var o oneKey
	o.set(core.PerSecond(10).WithAlgorithm(core.GCRA))
	lim := must(core.NewDynamic(o.limitOf, core.WithClock(clk)))
	ctx := context.Background()
	if d, _ := lim.Allow(ctx, "k", 8); d.Remaining != 2 {
		t.Fatalf("%+v", d)
	}
	o.set(core.PerSecond(10).WithBurst(20).WithAlgorithm(core.GCRA))
	if err := lim.Refund(ctx, "k", 5); err != nil {
		t.Fatal(err)
	}
	// Owes 300ms of a 2s span: 17 left after one more.
	if d, _ := lim.Allow(ctx, "k", 1); !d.Allowed || d.Remaining != 16 || d.ResetAfter != 400*ms {
		t.Fatalf("%+v", d)
	}
	if lim.Len() != 1 {
		t.Fatalf("Len %d", lim.Len())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestDynamicBounds(t *testing.T) {
	t.Parallel()
	if _, err := core.NewDynamic(nil); err == nil {
		t.Error("NewDynamic(nil) succeeded")
	}
	if _, err := core.New(core.PerSecond(1), core.WithMaxLimits(3)); err == nil || !strings.Contains(err.Error(), "NewDynamic") {
		t.Errorf("New with WithMaxLimits: %v", err)
	}
	if _, err := core.NewDynamic(tierOf, core.WithMaxLimits(-1)); err == nil {
		t.Error("WithMaxLimits(-1) accepted")
	}
	lim := must(core.NewDynamic(func(key string) core.Limit {
		switch key {
		case "bad":
			return core.Limit{Events: 1}
		case "a", "b", "c":
			return core.PerSecond(len(key) + int(key[0]))
		}
		return free
	}, core.WithMaxLimits(2)))
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "bad", 1); err == nil || !strings.Contains(err.Error(), "period") {
		t.Errorf("invalid limit: %v", err)
	}
	for _, k := range []string{"a", "b", "a"} {
		if _, err := lim.Allow(ctx, k, 1); err != nil {
			t.Fatal(k, err)
		}
	}
	_, err := lim.Allow(ctx, "c", 1)
	if !errors.Is(err, core.ErrTooManyLimits) || errors.Is(err, core.ErrStore) || errors.Is(err, core.ErrInvalidCost) {
		t.Fatalf("third limit: %v", err)
	}
	if err := lim.Refund(ctx, "c", 1); !errors.Is(err, core.ErrTooManyLimits) {
		t.Fatalf("refund under a third limit: %v", err)
	}
	if len(lim.Limits()) != 2 {
		t.Fatal(lim.Limits())
	}
}

// TestDynamicConcurrentMoves flips one key's limit back and forth while
// goroutines spend it on a frozen clock (run it with -race). Both limits
// have the same interval under GCRA, so a key owes time the same way under
// both: whatever the interleaving, the key admits exactly the larger burst
// in all. A state lost in a move would start afresh and admit more.
func TestDynamicConcurrentMoves(t *testing.T) {
	t.Parallel()
	small, large := core.PerSecond(100).WithBurst(50).WithAlgorithm(core.GCRA), core.PerSecond(100).WithAlgorithm(core.GCRA)
	var big atomic.Bool
	lim := must(core.NewDynamic(func(string) core.Limit {
		if big.Load() {
			return large
		}
		return small
	}, core.WithClock(coretest.NewClock(t0))))
	ctx := context.Background()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if g == 0 && i%3 == 0 {
					big.Store(!big.Load())
				}
				d, err := lim.Allow(ctx, "k", 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
				if i%10 == 0 {
					lim.Allow(ctx, fmt.Sprint("other", g, i), 1)
				}
			}
		}()
	}
	wg.Wait()
	big.Store(true)
	for {
		d, _ := lim.Allow(ctx, "k", 1)
		if !d.Allowed {
			break
		}
		admitted.Add(1)
	}
	if got := admitted.Load(); got != 100 {
		t.Fatalf("%d admitted, want 100", got)
	}
}
