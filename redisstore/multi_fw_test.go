package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestMultiShortForm plays random calls of fixed windows only (the calls
// a Multi sends in the short form, which lua/multi.lua decides without
// the generic layers) and requires of each the generic form's answer on
// the same state: the same decisions or error, and the same keys after
// (values and TTLs). Calls charge and refund, name keys twice, stack
// windows of whole seconds, of odd nanoseconds and of 60 days (worked in
// seconds), and find keys holding states written by hand: one from a
// later window (a server clock stepped back), one without a TTL, one
// whose TTL ends before its window, and one that does not parse.
func TestMultiShortForm(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
		prefix := fmt.Sprintf("s%d:", rand.Uint64())
		// Keys' TTLs are the fake clock's, but Redis ends them in real
		// time: with the default margin of 1 s, a step slower than that
		// (under -race on a busy machine) saw a key end between the two
		// forms. An hour's margin keeps every key through the test.
		opts := []redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithPrefix(prefix),
			redisstore.WithTimeout(5 * time.Second), redisstore.WithTTLMargin(time.Hour)}
		short := must(redisstore.NewMulti(c, opts...))
		generic := must(redisstore.NewMulti(c, opts...))
		redisstore.Generic(generic)
		r := rand.New(rand.NewPCG(7, 8))
		var rules [][]core.Limit
		for range 10 {
			var ls []core.Limit
			for j := range 1 + r.IntN(3) {
				l := core.Limit{Algorithm: core.FixedWindow, Events: 2 + r.IntN(6), Period: time.Duration(1+r.IntN(4)) * time.Second}
				d := time.Millisecond // distinct keys in one stack
				if r.IntN(6) == 0 {
					l.Period, d = 60*24*time.Hour, time.Second
				}
				l.Period += time.Duration(j) * d
				ls = append(ls, l)
			}
			rules = append(rules, ls)
		}
		ctx := context.Background()
		kinds := map[string]int{}
		for step := range 500 {
			items := make([]redisstore.Item, 1+r.IntN(4))
			var keys []string
			for i := range items {
				items[i] = redisstore.Item{Key: fmt.Sprintf("k%d", r.IntN(4)), Limits: rules[r.IntN(len(rules))], Cost: 1 + r.IntN(2)}
				for _, l := range items[i].Limits {
					keys = append(keys, redisstore.MultiKey(short, items[i].Key, l))
				}
			}
			if r.IntN(10) == 0 {
				k := keys[r.IntN(len(keys))]
				now := time.Unix(0, clk.Now())
				switch r.IntN(4) {
				case 0: // from a later window: the server clock stepped back
					c.Set(ctx, k, fmt.Sprintf("%d %d %d", now.Unix()+5, now.Nanosecond(), r.IntN(4)), time.Hour)
					kinds["later"]++
				case 1: // without a TTL
					c.Set(ctx, k, fmt.Sprintf("%d %d %d", now.Unix(), 0, r.IntN(4)), 0)
					kinds["no TTL"]++
				case 2:
					c.Set(ctx, k, "1 2", time.Hour)
					kinds["malformed"]++
				case 3: // full, its TTL shorter than its window (refused: a fix)
					// Seconds of real time: a TTL Redis ends while the step
					// runs would leave one form the key and not the other
					// (300 ms did, once, on a busy machine). Still shorter
					// than the 60-day windows.
					c.Set(ctx, k, fmt.Sprintf("%d %d %d", now.Unix(), now.Nanosecond(), 7), 3*time.Second)
					kinds["short TTL"]++
				}
			}
			refund := r.IntN(5) == 0
			before := takeSnapshot(t, c, keys)
			var want, got []core.Decision
			var werr, gerr error
			if refund {
				werr = generic.Refund(ctx, items)
			} else {
				want, werr = generic.Allow(ctx, items)
			}
			after := takeSnapshot(t, c, keys)
			before.restore(t, c)
			if refund {
				gerr = short.Refund(ctx, items)
			} else {
				got, gerr = short.Allow(ctx, items)
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("step %d: short form's error %v, the generic form's %v", step, gerr, werr)
			}
			if werr != nil {
				kinds["error"]++
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("step %d, item %d of %+v: short form %+v, generic %+v", step, i, items, got[i], want[i])
				}
				if !want[i].Allowed {
					kinds["refused"]++
				}
			}
			now := takeSnapshot(t, c, keys)
			for k := range now {
				if now[k].dump != after[k].dump || (now[k].ttl < 0) != (after[k].ttl < 0) || (now[k].ttl-after[k].ttl).Abs() > time.Second {
					t.Fatalf("step %d (refund %v): key %s holds %q (TTL %v) after the short form, %q (TTL %v) after the generic one", step, refund, k, now[k].dump, now[k].ttl, after[k].dump, after[k].ttl)
				}
			}
			clk.Advance(time.Duration(r.IntN(400)) * time.Millisecond)
		}
		for _, k := range []string{"later", "no TTL", "malformed", "short TTL", "error", "refused"} {
			if kinds[k] < 3 {
				t.Fatalf("%v: the test wants each case several times", kinds)
			}
		}
	}
	onServers(t, run)
	t.Run("evalsha", func(t *testing.T) {
		s := redistest.Start(t, noFunctions)
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		run(t, c)
	})
}

// TestMultiRefusedItemLeavesNothing: an item that refuses is charged
// nothing, so an item after it in the call sees its keys as its own
// limiter would after the refusal, uncharged. Here the first item's limit
// A admits and its limit B refuses; the second item, under A alone on the
// same key, must then find A whole (it reports an admission; the call is
// refused). It found A charged by the refused item.
func TestMultiRefusedItemLeavesNothing(t *testing.T) {
	c := single(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		a    core.Limit
	}{
		{"fixed windows, short form", core.Limit{Events: 1, Period: time.Hour, Algorithm: core.FixedWindow}},
		{"token bucket, generic form", core.Limit{Events: 1, Period: time.Hour, Burst: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("r%d:", rand.Uint64())
			b := core.Limit{Events: 1, Period: 2 * time.Hour, Algorithm: core.FixedWindow}
			clk := coretest.NewClock(time.Unix(1_700_000_000, 0)) // no window turns
			opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithClock(clk), redisstore.WithScriptClock(clk)}
			m := must(redisstore.NewMulti(c, opts...))
			if _, err := m.Allow(ctx, []redisstore.Item{{Key: "k", Limits: []core.Limit{b}, Cost: 1}}); err != nil {
				t.Fatal(err) // B spent
			}
			ds, err := m.Allow(ctx, []redisstore.Item{
				{Key: "k", Limits: []core.Limit{tc.a, b}, Cost: 1},
				{Key: "k", Limits: []core.Limit{tc.a}, Cost: 1},
			})
			if err != nil {
				t.Fatal(err)
			}
			if ds[0].Allowed || !ds[1].Allowed || ds[1].Remaining != 0 {
				t.Fatalf("decisions %+v; want the first refused (by B) and the second admitted by A, whole, 0 left", ds)
			}
			d, err := redisstore.MustNew(c, tc.a, opts...).Allow(ctx, "k", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("A after the refused call: %+v, %v; want it admitted (nothing charged)", d, err)
			}
		})
	}
}
