package redisstore_test

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/redisstore"
)

// Building a Limiter contacts no server; its keys follow the documented
// layout, and a limit too long for the scripts' doubles is refused.
func ExampleNew() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerMinute(100), redisstore.WithPrefix("api:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lim.Key("203.0.113.7"))

	_, err = redisstore.New(rdb, (core.Limit{Events: 1, Period: 90 * 24 * time.Hour}).WithAlgorithm(core.FixedWindow))
	fmt.Println(err != nil)
	// Output:
	// api:{203.0.113.7}:tb:100/60000000000:100
	// true
}

// A stack of two limits keeps each layer's state where a Limiter of that
// limit would; building it contacts no server.
func ExampleNewStack() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	s, err := redisstore.NewStack(rdb, []redisstore.Layer{
		{Limit: core.PerSecond(5)},
		{Limit: core.PerHour(100_000), Options: []redisstore.Option{redisstore.WithAlgorithm(core.FixedWindow)}},
	}, redisstore.WithPrefix("api:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range s.Keys("user-1") {
		fmt.Println(k)
	}
	for _, p := range s.Policies() {
		fmt.Println(p.Name)
	}
	// Output:
	// api:{user-1}:tb:5/1000000000:5
	// api:{user-1}:fw:100000/3600000000000:100000
	// 5-per-1s
	// 100000-per-1h0m0s
}

// The sliding log and the sub-windows have keys of their own, and limits
// that would need more log entries per key than the cap are refused, as in
// memory.
func ExampleWithSubWindows() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	sub := redisstore.MustNew(rdb, core.PerMinute(100).WithAlgorithm(core.SlidingWindow).WithSubWindows(6))
	fmt.Println(sub.Key("203.0.113.7"))
	_, err := redisstore.New(rdb, core.PerMinute(100).WithAlgorithm(core.SlidingWindow).WithSubWindows(7))
	fmt.Println(err)
	// Output:
	// floodgate:{203.0.113.7}:sw6:100/60000000000:100
	// redisstore: WithSubWindows(7): the period 1m0s is not a whole number of nanoseconds times 7; pick a number of sub-windows that divides it
}

func ExampleWithMaxEntries() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	_, err := redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog))
	fmt.Println(err)
	lim, err := redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog).WithMaxEntries(5000))
	fmt.Println(lim.Key("203.0.113.7"), err)
	// Output:
	// redisstore: core.SlidingLog: 5000 events per period need up to 5000 log entries per key, more than WithMaxEntries allows (1024); raise the cap with WithMaxEntries(5000) or use core.SlidingWindow (with WithSubWindows for a closer count)
	// floodgate:{203.0.113.7}:sl:5000/3600000000000:5000 <nil>
}

// A shaper on Redis: requests for a key take turns 100 ms apart across
// every instance, each admitted with the Delay of its turn, up to 250 ms.
// Building it contacts no server; its key carries the longest wait, and
// settings that do not fit the algorithm are refused, as in core.
func ExampleWithMaxDelay() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerSecond(10).WithAlgorithm(core.LeakyBucket).WithMaxDelay(250*time.Millisecond))
	fmt.Println(lim.Key("203.0.113.7"))

	_, err = redisstore.New(rdb, core.PerSecond(10).WithMaxDelay(250*time.Millisecond))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerSecond(10).WithAlgorithm(core.WarmUp))
	fmt.Println(err)
	// Output:
	// floodgate:{203.0.113.7}:lb:10/1000000000:10:250000000
	// redisstore: WithMaxDelay applies to LeakyBucket only, not token-bucket
	// redisstore: WarmUp needs WithWarmUp(period, coldFactor), for example WithWarmUp(10*time.Second, 3)
}
