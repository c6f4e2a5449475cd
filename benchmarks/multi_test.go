package benchmarks

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/redisstore"
)

// multi3 are the limits of the multi3 and seq3 rows: the policy and two
// wide ones, so that nearly every decision is an admission.
var multi3 = []core.Limit{policy, core.PerHour(100_000).WithAlgorithm(core.FixedWindow), core.PerMinute(10_000).WithAlgorithm(core.GCRA)}

// newFloodgateMulti is a redisstore.Multi deciding a client key under
// each of multi3's limits, three items of one call.
func newFloodgateMulti(tb testing.TB, c *redis.Client) redisDecider {
	m, err := redisstore.NewMulti(c)
	if err != nil {
		tb.Fatal(err)
	}
	return floodgateMulti{m}
}

type floodgateMulti struct{ m *redisstore.Multi }

func (f floodgateMulti) decide(ctx context.Context, key string) (bool, error) {
	items := [3]redisstore.Item{
		{Key: key, Limits: multi3[0:1], Cost: 1},
		{Key: key, Limits: multi3[1:2], Cost: 1},
		{Key: key, Limits: multi3[2:3], Cost: 1},
	}
	ds, err := f.m.Allow(ctx, items[:])
	if err != nil {
		return false, err
	}
	return ds[0].Allowed && ds[1].Allowed && ds[2].Allowed, nil
}

// newFloodgateSeq3 is three redisstore Limiters, one per limit of multi3,
// called one after another, the admitted ones refunded when one refuses.
func newFloodgateSeq3(tb testing.TB, c *redis.Client) redisDecider {
	var f floodgateSeq3
	for i, l := range multi3 {
		lim, err := redisstore.New(c, l, redisstore.WithDenyCache(0))
		if err != nil {
			tb.Fatal(err)
		}
		f[i] = lim
	}
	return f
}

type floodgateSeq3 [3]*redisstore.Limiter

func (f floodgateSeq3) decide(ctx context.Context, key string) (bool, error) {
	for i, l := range f {
		d, err := l.Allow(ctx, key, 1)
		if err == nil && d.Allowed {
			continue
		}
		for _, back := range f[:i] {
			_ = back.Refund(ctx, key, 1)
		}
		return false, err
	}
	return true, nil
}
