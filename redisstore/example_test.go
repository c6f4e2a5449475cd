package redisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/redisstore"
)

// Building a Limiter contacts no server; a limit too long for the
// scripts' doubles is refused.
func ExampleNew() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerMinute(100).WithName("api"), redisstore.WithPrefix("api:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lim.Limit())

	// Lua numbers are doubles: a sliding window of 90 days is too long on
	// Redis, but a fixed window of a year is not.
	_, err = redisstore.New(rdb, (core.Limit{Events: 1, Period: 90 * 24 * time.Hour}).WithAlgorithm(core.SlidingWindow))
	fmt.Println(err != nil)
	_, err = redisstore.New(rdb, (core.Limit{Events: 1, Period: 365 * 24 * time.Hour}).WithAlgorithm(core.FixedWindow))
	fmt.Println(err)
	// Output:
	// 100/min name=api
	// true
	// <nil>
}

// A stack of two limits, each with its own algorithm, decided in one
// script; building it contacts no server.
func ExampleNewStack() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	s, err := redisstore.NewStack(rdb, []core.Limit{
		core.PerSecond(5),
		core.PerHour(100_000).WithAlgorithm(core.FixedWindow),
	}, redisstore.WithPrefix("api:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range s.Policies() {
		fmt.Println(p.Name)
	}
	// Output:
	// 5-per-s
	// 100000-per-h
}

// Fail local: with no Redis to ask (nothing listens on port 1), each
// decision is made in memory under the same policy, and Health counts
// them. (Failures in a row soon open the breaker, after which Redis is not
// asked until the probe.)
func ExampleWithFallback() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerMinute(2), redisstore.WithFallback())
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		d, err := lim.Allow(context.Background(), "203.0.113.7", 1)
		fmt.Println(d.Allowed, err)
	}
	h := lim.Health()
	fmt.Println(h.StoreDecisions, h.LocalDecisions, h.Failures)
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
	// 0 3 3
}

// The sub-windows need a number that divides the period, as in memory.
func ExampleNew_subWindows() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	_, err := redisstore.New(rdb, core.PerMinute(100).WithSubWindows(6))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerMinute(100).WithSubWindows(7))
	fmt.Println(err)
	// Output:
	// <nil>
	// core: SubWindows 7: the period 1m0s is not a whole number of nanoseconds times 7; pick a number of sub-windows that divides it
}

// The sliding log's entries per key are capped by the policy's
// MaxEntries, as in memory.
func ExampleNew_slidingLog() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	_, err := redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog).WithMaxEntries(5000))
	fmt.Println(err)
	// Output:
	// core: SlidingLog: 5000 events per period need up to 5000 log entries per key (16 bytes each), more than MaxEntries allows (1024); raise the cap with WithMaxEntries(5000) or use SlidingWindow (with sub-windows for a closer count)
	// <nil>
}

// A shaper on Redis: requests for a key take turns 100 ms apart across
// every instance, each admitted with the Delay of its turn, up to 250 ms.
// Settings that do not fit the algorithm are refused, as in core.
func ExampleNew_leakyBucket() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	_, err := redisstore.New(rdb, core.PerSecond(10).WithMaxDelay(250*time.Millisecond))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerSecond(10).WithMaxDelay(250*time.Millisecond).WithAlgorithm(core.TokenBucket))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerSecond(10).WithAlgorithm(core.WarmUp))
	fmt.Println(err)
	// Output:
	// <nil>
	// core: MaxDelay applies to LeakyBucket only, not token-bucket
	// core: limit WarmUp 0s: the WarmUp algorithm needs a warm-up period > 0 and <= 640511h56m49.213693951s, for example PerSecond(100).WithWarmUp(10*time.Second, 3)
}
