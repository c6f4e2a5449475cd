package rls_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/redisstore"
)

// commands returns how many commands clients sent the server, INFO's
// aside.
func commands(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	reply, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return redistest.ParseInfo(reply).ClientCalls(t)
}

// redisService is a Service on srv's Redis, with redisstore's limiters
// and Multi (as cmd/floodgate-ratelimit builds them), the local cache,
// and the rules of tb.
func redisService(t *testing.T, c *redis.Client, tb table) *rls.Service {
	t.Helper()
	store := func(limits []core.Limit) (core.Limiter, error) {
		if len(limits) == 1 {
			return redisstore.New(c, limits[0], redisstore.WithDenyCache(0))
		}
		return redisstore.NewStack(c, limits, redisstore.WithDenyCache(0))
	}
	m, err := redisstore.NewMulti(c)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rls.New(rls.Config{Store: store, Multi: redisMulti{m}, LocalCacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(tb, tb.rules()); err != nil {
		t.Fatal(err)
	}
	return svc
}

// untilNextSecond waits for the next second of the clock to begin, and
// a little more: at most 1.05 s.
func untilNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 50*time.Millisecond).Sub(now))
}

// TestLocalCacheRedis: on Redis, a key Redis refused is refused from the
// cache with no command sent, with nothing left and the second's reset,
// until its window ends; then Redis is asked again, and admits it in the
// next window. A request whose other descriptors Redis would admit
// costs no command either.
func TestLocalCacheRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	sec := &rls.Rule{ID: "s", Limits: []core.Limit{core.PerSecond(1).WithAlgorithm(core.FixedWindow)}, RequestsPerUnit: 1, Unit: rlsv3.RateLimitResponse_RateLimit_SECOND}
	b := perMinute("b", "b", 100)
	tb := table{"d|k=s": {sec, "ks"}, "d|k=b": {b, "kb"}, "d|k=w": {b, "kw"}}
	svc := redisService(t, c, tb)
	ask := func(ds ...*rlcommon.RateLimitDescriptor) (*rlsv3.RateLimitResponse, int64) {
		t.Helper()
		before := commands(t, c)
		resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
		if err != nil {
			t.Fatal(err)
		}
		return resp, commands(t, c) - before
	}
	ask(desc("k=w")) // loads the library
	for attempt := 1; ; attempt++ {
		untilNextSecond()
		start := time.Now().Unix()
		var got []string
		for _, ds := range [][]*rlcommon.RateLimitDescriptor{{desc("k=s")}, {desc("k=s")}, {desc("k=s")}, {desc("k=b"), desc("k=s")}} {
			resp, n := ask(ds...)
			got = append(got, fmt.Sprintf("%s/%d/%s %d", resp.GetOverallCode(), resp.GetStatuses()[len(ds)-1].GetLimitRemaining(),
				resp.GetStatuses()[len(ds)-1].GetDurationUntilReset().AsDuration(), n))
		}
		if time.Now().Unix() != start && attempt < 3 {
			continue // a second ended: the answers are of two windows
		}
		want := []string{"OK/0/1s 1", "OVER_LIMIT/0/1s 1", "OVER_LIMIT/0/1s 0", "OVER_LIMIT/0/1s 0"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answers and commands: %q, want %q", got, want)
		}
		break
	}
	untilNextSecond()
	if resp, n := ask(desc("k=s")); resp.GetOverallCode() != rlsv3.RateLimitResponse_OK || n != 1 {
		t.Fatalf("the next second: %v, %d commands; want OK, 1", resp, n)
	}
}

// TestLocalCacheRedisConcurrent: on Redis, requests and checks
// (hits_addend 0) from many goroutines admit exactly each key's limit,
// and, once the keys are refused, further requests send no command.
// Run with -race.
func TestLocalCacheRedisConcurrent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	const keys, limit, workers, each = 4, 10, 8, 60
	a := &rls.Rule{ID: "a", Limits: []core.Limit{core.PerHour(limit).WithAlgorithm(core.FixedWindow)}, RequestsPerUnit: limit, Unit: rlsv3.RateLimitResponse_RateLimit_HOUR}
	tb := table{}
	for i := range keys {
		tb[fmt.Sprintf("d|k=%d", i)] = match{a, fmt.Sprint("k", i)}
	}
	for attempt := 1; ; attempt++ {
		if err := c.FlushDB(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		svc := redisService(t, c, tb)
		hour := time.Now().Unix() / 3600
		var admitted [keys]atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					k := (w + i) % keys
					d := desc(fmt.Sprint("k=", k))
					check := (w*each+i)%3 == 0
					if check {
						d.HitsAddend = wrapperspb.UInt64(0)
					}
					resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{d}})
					if err != nil {
						t.Error(err)
						return
					}
					if !check && resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
						admitted[k].Add(1)
					}
				}
			}()
		}
		wg.Wait()
		ask := func(k int) bool {
			resp, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc(fmt.Sprint("k=", k))}})
			if err != nil {
				t.Fatal(err)
			}
			return resp.GetOverallCode() == rlsv3.RateLimitResponse_OK
		}
		for k := range keys {
			for ask(k) {
				admitted[k].Add(1)
			}
		}
		before := commands(t, c)
		for k := range keys {
			if ask(k) {
				t.Fatalf("key %d admitted once refused", k)
			}
		}
		n := commands(t, c) - before
		if time.Now().Unix()/3600 != hour && attempt < 3 {
			continue // an hour ended: the counts are of two windows
		}
		for k := range keys {
			if got := admitted[k].Load(); got != limit {
				t.Errorf("key %d: %d admitted, want %d", k, got, limit)
			}
		}
		if n != 0 {
			t.Errorf("%d commands for refused keys, want none", n)
		}
		return
	}
}
