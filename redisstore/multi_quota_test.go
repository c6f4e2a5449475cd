package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// multiRig is a Multi made WithLocalQuota on the rig's fake clock.
func multiRig(t *testing.T, c redis.UniversalClient, length time.Duration, hot int) (*quotaRig, *redisstore.Multi) {
	r := newRig(t)
	return r, must(redisstore.NewMulti(c, r.options(length, hot)...))
}

// call decides items with m, settles its grants and returns, and checks
// the call's answer: admitted or not, and each decision's Leased ('L' for
// a decision made from a lease, '-' for one of Redis).
func call(t *testing.T, m *redisstore.Multi, step string, items []redisstore.Item, admitted bool, leased string) []core.Decision {
	t.Helper()
	ds, err := m.Allow(context.Background(), items)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	redisstore.MultiSettle(m)
	all := true
	got := ""
	for _, d := range ds {
		all = all && d.Allowed
		got += map[bool]string{true: "L", false: "-"}[d.Leased]
	}
	if all != admitted || got != leased {
		t.Errorf("%s: %+v: admitted %v, leased %s; want %v, %s", step, ds, all, got, admitted, leased)
	}
	return ds
}

// TestMultiQuota: a Multi made WithLocalQuota goes to Redis until its keys
// are hot, asks their leases, then decides calls whose every key holds
// enough units in memory; in a call some keys of which lack, those go to
// Redis, and the others' units are spent if Redis admits, given back to
// their leases if it refuses. The shared state counts exactly what Redis
// decided and what the leases took.
func TestMultiQuota(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	r, m := multiRig(t, c, time.Second, 2)
	fa := core.Limit{Events: 100, Period: time.Minute, Algorithm: core.FixedWindow}
	sb := []core.Limit{{Events: 100, Period: time.Minute, Burst: 100, Algorithm: core.GCRA}, {Events: 1000, Period: time.Hour, Algorithm: core.FixedWindow}}
	a := redisstore.Item{Key: "a", Limits: []core.Limit{fa}, Cost: 1}
	b := redisstore.Item{Key: "b", Limits: sb, Cost: 1}
	cold := redisstore.Item{Key: "cold", Limits: []core.Limit{fa}, Cost: 1}
	b3 := b
	b3.Cost = 3
	z := redisstore.Item{Key: "z", Limits: []core.Limit{{Events: 1, Period: time.Minute, Algorithm: core.FixedWindow}}, Cost: 1}

	health := func(step string, store, leased, leases, returned uint64) {
		t.Helper()
		h := m.Health()
		if h.StoreDecisions != store || h.LeaseDecisions != leased || h.Leases != leases || h.Returned != returned {
			t.Errorf("%s: health %+v, want %d store decisions, %d from leases, %d leases, %d returned", step, h, store, leased, leases, returned)
		}
	}
	held := func(step string, wa, wb int64) {
		t.Helper()
		if ga, gb := redisstore.MultiHeld(m, "a", fa), redisstore.MultiHeld(m, "b", sb...); ga != wa || gb != wb {
			t.Errorf("%s: a holds %d, b %d; want %d and %d", step, ga, gb, wa, wb)
		}
	}

	call(t, m, "cold", []redisstore.Item{a, b}, true, "--")
	health("cold", 1, 0, 0, 0)
	// Hot now (2 calls): leases of 3 (the demand, 2 a second, and a
	// quarter, rounded up) are asked; the call itself goes to Redis.
	call(t, m, "hot", []redisstore.Item{a, b}, true, "--")
	health("hot", 2, 0, 2, 0)
	held("hot", 3, 3)
	ds := call(t, m, "leased", []redisstore.Item{a, b}, true, "LL")
	health("leased", 2, 1, 2, 0)
	held("leased", 2, 2)
	if ds[0].Limit != fa || ds[1].Limit.Name == "" {
		t.Errorf("leased: limits %v and %v, want a's and a named layer of b's", ds[0].Limit, ds[1].Limit)
	}
	// A cold key: it alone goes to Redis, which admits it; a's unit is
	// spent.
	call(t, m, "with a cold key", []redisstore.Item{a, cold}, true, "L-")
	health("with a cold key", 3, 1, 2, 0)
	held("with a cold key", 1, 2)
	// b lacks 3: it goes to Redis; a spends its last unit. Both ask new
	// leases: a of 7 (5 calls in the second), b of 5 (4); b's old lease's
	// 2 units go back.
	call(t, m, "b lacks", []redisstore.Item{a, b3}, true, "L-")
	health("b lacks", 4, 1, 4, 2)
	held("b lacks", 7, 5)
	// z admits one a minute: the first call spends a's unit, the second,
	// which z refuses in Redis, gives a's back to its lease. z, hot, asks
	// a lease, which finds nothing.
	call(t, m, "z admits", []redisstore.Item{a, z}, true, "L-")
	call(t, m, "z refuses", []redisstore.Item{a, z}, false, "L-")
	health("z refuses", 6, 1, 5, 2)
	held("z refuses", 6, 5)

	// a was charged by Redis twice and by its grants 3 and 7: 12. b's GCRA
	// layer: by Redis 1+1+3, by its grants 3 and 5, less 2 given back: 11.
	plain := []redisstore.Option{redisstore.WithClock(r.clk), redisstore.WithScriptClock(r.clk), redisstore.WithPrefix(r.prefix)}
	if d := must(must(redisstore.New(c, fa, plain...)).Allow(context.Background(), "a", 1)); d.Remaining != 100-12-1 {
		t.Errorf("a Limiter on a after: %+v, want %d remaining", d, 100-12-1)
	}
	if d := must(must(redisstore.NewStack(c, sb, plain...)).Allow(context.Background(), "b", 1)); d.Remaining != 100-11-1 {
		t.Errorf("a Stack on b after: %+v, want %d remaining", d, 100-11-1)
	}
}

// TestMultiQuotaRefusedHere: a key whose grant found nothing is refused in
// memory until its wait ends, and so is every call that names it while
// the call's other keys hold leases: nothing is taken from them.
func TestMultiQuotaRefusedHere(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	_, m := multiRig(t, c, time.Second, 1)
	two := core.Limit{Events: 2, Period: time.Minute, Algorithm: core.FixedWindow}
	fa := core.Limit{Events: 100, Period: time.Minute, Algorithm: core.FixedWindow}
	x := redisstore.Item{Key: "x", Limits: []core.Limit{two}, Cost: 1}
	y := redisstore.Item{Key: "y", Limits: []core.Limit{fa}, Cost: 1}

	// Hot at once: x gets a lease of 1 (half its burst, the cap), y of 2;
	// the call, in Redis, takes x's other unit.
	call(t, m, "first", []redisstore.Item{x, y}, true, "--")
	if hx, hy := redisstore.MultiHeld(m, "x", two), redisstore.MultiHeld(m, "y", fa); hx != 1 || hy != 2 {
		t.Fatalf("first: x holds %d, y %d; want 1 and 2", hx, hy)
	}
	// From the leases; x's next grant finds nothing left: a wait of one
	// lease length.
	call(t, m, "leased", []redisstore.Item{x, y}, true, "LL")
	ds := call(t, m, "refused here", []redisstore.Item{x, y}, false, "LL")
	if ds[0].Allowed || ds[0].RetryAfter != time.Second || !ds[1].Allowed {
		t.Errorf("refused here: %+v, want x refused for the lease's 1 s, y admitted", ds)
	}
	if h := m.Health(); h.StoreDecisions != 1 || h.LeaseDecisions != 2 {
		t.Errorf("health %+v, want 1 store decision and 2 from leases", h)
	}
	// y's unit went back to its lease, which was below a quarter: its
	// next lease (of 4: 3 calls in the second) replaced it.
	if hy := redisstore.MultiHeld(m, "y", fa); hy != 4 {
		t.Errorf("y holds %d after the refusal, want 4", hy)
	}
}

// TestMultiQuotaBound: three Multis made WithLocalQuota (three instances)
// share one server; 24 goroutines call them with three keys a call drawn
// from a Zipf mix over 64 keys, each a fixed window of 100 a second, for
// 1.2 s. No window of any key admits more than its limit (WithLocalQuota's
// bound), and the hot keys were decided in memory.
func TestMultiQuotaBound(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	checkServerClock(t, c)
	limit := core.Limit{Events: 100, Period: time.Second, Algorithm: core.FixedWindow}
	prefix := fmt.Sprintf("mqb%d:", rand.Uint64())
	var ms []*redisstore.Multi
	for range 3 {
		ms = append(ms, must(redisstore.NewMulti(c, redisstore.WithPrefix(prefix), redisstore.WithTimeout(5*time.Second),
			redisstore.WithLocalQuota(redisstore.LocalQuota{}))))
	}
	const keys, routines = 64, 24
	var mu sync.Mutex
	adm := map[int][]fleetAdm{}
	stop := time.Now().Add(1200 * time.Millisecond)
	var wg sync.WaitGroup
	for g := range routines {
		wg.Go(func() {
			z := rand.NewZipf(rand.New(rand.NewPCG(uint64(g), 1)), 1.1, 1, keys-1)
			m := ms[g%len(ms)]
			var local []fleetAdm
			for time.Now().Before(stop) {
				items := make([]redisstore.Item, 3)
				idx := make([]int, 3)
				for j := range items {
					idx[j] = int(z.Uint64())*3 + j // each place its own keys
					items[j] = redisstore.Item{Key: fmt.Sprintf("k%d", idx[j]), Limits: []core.Limit{limit}, Cost: 1}
				}
				s := time.Now().UnixNano()
				ds, err := m.Allow(context.Background(), items)
				r := time.Now().UnixNano()
				if err != nil {
					t.Error(err)
					return
				}
				if ds[0].Allowed && ds[1].Allowed && ds[2].Allowed {
					for j, d := range ds {
						local = append(local, fleetAdm{key: idx[j], s: s, r: r, reset: int64(d.ResetAfter)})
					}
				}
			}
			mu.Lock()
			for _, a := range local {
				adm[a.key] = append(adm[a.key], a)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	var leased, store uint64
	for _, m := range ms {
		h := m.Health() // lease ends still fire on real timers: no settling
		leased, store = leased+h.LeaseDecisions, store+h.StoreDecisions
	}
	t.Logf("%d calls decided from leases, %d in Redis", leased, store)
	if leased == 0 {
		t.Errorf("no call decided from leases")
	}
	for k := range 3 * 4 { // the hottest: each place's first four
		checkFixedWindows(t, k, adm[k], limit)
	}
}
