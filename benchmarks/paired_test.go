package benchmarks

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// pairedRows are the cold-path rows BenchmarkRedisPaired takes turns
// between: PING, then one decision (one round trip) of each limiter.
var pairedRows = []struct {
	name string
	new  func(testing.TB, *redis.Client) redisDecider
}{
	{"ping", newPing},
	{"floodgate", newFloodgateRedis(core.TokenBucket)},
	{"floodgate-gcra", newFloodgateRedis(core.GCRA)},
	// Without redisstore's per-call bound (DefaultTimeout), as the peers
	// run: neither bounds a call by more than the caller's context.
	{"floodgate-gcra-notimeout", newFloodgateRedis(core.GCRA, redisstore.WithTimeout(0))},
	// With a random TTL margin per call (WithTTLJitter, 300 s).
	{"floodgate-jitter", newFloodgateRedis(core.TokenBucket, redisstore.WithTTLJitter(300*time.Second))},
	{"redis_rate", newRedisRate},
	{"ulule", newUluleRedis},
}

// BenchmarkRedisPaired compares one sequential decision, one round trip,
// of floodgate, redis_rate and ulule with a PING, on one local
// redis-server, in a way this noisy machine cannot bias: each op makes one
// call of every row, the rows taking turns in a rotating order, each on its
// own connection and over the same 4,096 keys (the policy, 100/s: every
// decision admitted). A stall of the machine, which in BenchmarkRedis
// falls on whichever row runs at the time, here falls on all rows alike.
// Each call is timed on its own; the metrics are, for every row, the median
// call in µs (NAME-µs) and that median over PING's (NAME-xping), the
// figure the issue states ("1.27× a PING"). ns/op is the time of one call
// of every row together and means little. Run with -benchtime 2000x or
// more, so that the medians are of many calls.
func BenchmarkRedisPaired(b *testing.B) {
	srv := redistest.Start(b)
	rb := &redisBench{srv: srv, keys: benchwork.Keys(redisKeys)}
	ctx := context.Background()
	n := len(pairedRows)
	deciders := make([]redisDecider, n)
	var admin *redis.Client
	for i, row := range pairedRows {
		c, _ := rb.client(b, nil)
		if i == 0 {
			admin = c
		}
		deciders[i] = row.new(b, c)
	}
	flush(b, admin)
	// Every row's connection is open and its script loaded before timing.
	for i, d := range deciders {
		if ok, err := d.decide(ctx, "warm-up"); err != nil || !ok {
			b.Fatalf("%s: a warm-up call answered ok=%v, err=%v", pairedRows[i].name, ok, err)
		}
	}
	took := make([][]time.Duration, n)
	for i := range took {
		took[i] = make([]time.Duration, 0, b.N)
	}
	refused := make([]int, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := rb.keys[i%redisKeys]
		for j := range n {
			r := (i + j) % n
			start := time.Now()
			ok, err := deciders[r].decide(ctx, key)
			took[r] = append(took[r], time.Since(start))
			if err != nil {
				b.Fatalf("%s: %v", pairedRows[r].name, err)
			}
			if !ok {
				refused[r]++
			}
		}
	}
	b.StopTimer()
	medians := make([]float64, n)
	for r, t := range took {
		slices.Sort(t)
		medians[r] = float64(t[len(t)/2]) / float64(time.Microsecond)
		if refused[r] > b.N/10 {
			b.Fatalf("%s: %d of %d calls refused or not as expected", pairedRows[r].name, refused[r], b.N)
		}
	}
	for r, row := range pairedRows {
		b.ReportMetric(medians[r], row.name+"-µs")
		if r > 0 {
			b.ReportMetric(medians[r]/medians[0], row.name+"-xping")
		}
	}
}
