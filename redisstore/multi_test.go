package redisstore_test

import (
	"context"
	"errors"
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

// multiKinds are the policies a Multi takes, without a rate.
var multiKinds = []core.Limit{
	{Algorithm: core.TokenBucket}, {Algorithm: core.TokenBucket, Overdraft: true}, {Algorithm: core.GCRA},
	{Algorithm: core.FixedWindow}, {Algorithm: core.SlidingWindow}, {Algorithm: core.SlidingWindow, SubWindows: 4},
	{Algorithm: core.SlidingLog}, {Algorithm: core.WarmUp, WarmUp: 3 * time.Second},
}

// randomLimit is a limit of a random kind and a small random rate.
func randomLimit(r *rand.Rand) core.Limit {
	l := multiKinds[r.IntN(len(multiKinds))]
	l.Events, l.Period = 2+r.IntN(6), time.Duration(1+r.IntN(4))*time.Second
	if l.Algorithm == core.TokenBucket || l.Algorithm == core.GCRA {
		l.Burst = l.Events + r.IntN(3)
	}
	return l
}

// snapshot is the state of some Redis keys: each one's DUMP, or "" when
// absent, and its PTTL.
type snapshot map[string]struct {
	dump string
	ttl  time.Duration
}

func takeSnapshot(t *testing.T, c redis.UniversalClient, keys []string) snapshot {
	t.Helper()
	s := snapshot{}
	for _, k := range keys {
		d, err := c.Dump(context.Background(), k).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		ttl, _ := c.PTTL(context.Background(), k).Result()
		s[k] = struct {
			dump string
			ttl  time.Duration
		}{d, ttl}
	}
	return s
}

// restore puts the keys back as s holds them.
func (s snapshot) restore(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	for k, v := range s {
		if v.dump == "" {
			c.Del(ctx, k)
			continue
		}
		if err := c.RestoreReplace(ctx, k, max(v.ttl, 0), v.dump).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMultiMatchesLimiters plays random calls of one to four items, each
// under one to three limits of random algorithms, some keys shared, at
// fake instants, and requires of every call: the decisions of each item's
// own Limiter or Stack, made on the same state; every item charged, as
// those made, when all admit; and no key changed at all when one refuses.
func TestMultiMatchesLimiters(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, c redis.UniversalClient) {
		runAs(t, busy)
		_, cluster := c.(*redis.ClusterClient)
		clk := coretest.NewClock(time.Unix(1_700_000_000, 0))
		prefix := fmt.Sprintf("m%d:", rand.Uint64())
		// An hour's margin: the keys' TTLs run on the server's clock while
		// the scripts decide on clk, and a snapshot restores a key with
		// the TTL it had left; on a slow run a key restored with a few
		// milliseconds left would be gone before it is compared.
		opts := []redisstore.Option{redisstore.WithClock(clk), redisstore.WithScriptClock(clk), redisstore.WithPrefix(prefix),
			redisstore.WithTimeout(5 * time.Second), redisstore.WithDenyCache(0), redisstore.WithTTLMargin(time.Hour)}
		m, err := redisstore.NewMulti(c, opts...)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, 6))
		type rule struct {
			limits []core.Limit
			lim    core.Limiter
			keys   func(string) []string
		}
		var rules []rule
		for range 12 {
			var ls []core.Limit
			for j := range 1 + r.IntN(3) {
				l := randomLimit(r)
				l.Period += time.Duration(j) * time.Millisecond // distinct keys in one stack
				ls = append(ls, l)
			}
			if len(ls) == 1 {
				lim := redisstore.MustNew(c, ls[0], opts...)
				rules = append(rules, rule{ls, lim, func(k string) []string { return []string{lim.Key(k)} }})
				continue
			}
			s, err := redisstore.NewStack(c, ls, opts...)
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, rule{ls, s, s.Keys})
		}
		admitted, refused := 0, 0
		steps := shortSteps(600)
		for step := range steps {
			n := 1 + r.IntN(4)
			items := make([]redisstore.Item, n)
			used := map[string]bool{}
			var keys []string
			var lims []core.Limiter
			for i := range items {
				var ru rule
				var key string
				for { // a sliding log's key at most once per call
					ru, key = rules[r.IntN(len(rules))], fmt.Sprintf("k%d", r.IntN(5))
					ks := ru.keys(key)
					if !usesLog(ru.limits) || !used[ks[0]] {
						for _, k := range ks {
							used[k] = true
						}
						keys = append(keys, ks...)
						break
					}
				}
				items[i] = redisstore.Item{Key: key, Limits: ru.limits, Cost: 1 + r.IntN(2)}
				lims = append(lims, ru.lim)
			}
			before := takeSnapshot(t, c, keys)
			want := make([]core.Decision, n)
			all := true
			for i, it := range items {
				if want[i], err = lims[i].Allow(context.Background(), it.Key, it.Cost); err != nil {
					t.Fatal(err)
				}
				// One after the other, as Multi's script decides them: a key
				// named twice sees its first charge.
				all = all && want[i].Allowed
			}
			after := takeSnapshot(t, c, keys)
			before.restore(t, c)
			got, err := m.Allow(context.Background(), items)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			for i := range items {
				if got[i] != want[i] {
					t.Fatalf("step %d, item %d of %+v: Multi %+v, its limiter %+v", step, i, items, got[i], want[i])
				}
			}
			// On a Cluster, a refused call's slots that admitted were
			// charged, then refunded: their keys hold the state as a refund
			// writes it. The slots that refused were never written.
			refusing := map[int]bool{}
			for i, it := range items {
				if !want[i].Allowed {
					refusing[redistest.KeySlot("{"+it.Key+"}")] = true
				}
			}
			now := takeSnapshot(t, c, keys)
			for k := range now {
				w := after
				if !all {
					w = before
					if cluster && !refusing[redistest.KeySlot(k)] {
						continue
					}
				}
				if now[k].dump != w[k].dump {
					t.Fatalf("step %d (all admitted: %v): key %s holds %q, want %q", step, all, k, now[k].dump, w[k].dump)
				}
			}
			if all {
				admitted++
			} else {
				refused++
			}
			clk.Advance(time.Duration(r.IntN(400)) * time.Millisecond)
		}
		if admitted < steps/6 || refused < steps/6 {
			t.Fatalf("%d calls admitted and %d refused; the test wants many of both", admitted, refused)
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

func usesLog(ls []core.Limit) bool {
	for _, l := range ls {
		if l.Algorithm == core.SlidingLog && l.SubWindows == 0 {
			return true
		}
	}
	return false
}

// storeErr fails t unless err is a *core.StoreError.
func storeErr(t *testing.T, err error) {
	t.Helper()
	var se *core.StoreError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a *core.StoreError", err, err)
	}
}
