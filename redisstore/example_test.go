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

	s, err := redisstore.NewStack(rdb, []core.Limit{
		core.PerSecond(5),
		core.PerHour(100_000).WithAlgorithm(core.FixedWindow),
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
	// 5-per-s
	// 100000-per-h
}

// The sliding log and the sub-windows have keys of their own, and limits
// that would need more log entries per key than the cap are refused, as in
// memory.
func ExampleNew_subWindows() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	sub := redisstore.MustNew(rdb, core.PerMinute(100).WithSubWindows(6))
	fmt.Println(sub.Key("203.0.113.7"))
	_, err := redisstore.New(rdb, core.PerMinute(100).WithSubWindows(7))
	fmt.Println(err)
	// Output:
	// floodgate:{203.0.113.7}:sw6:100/60000000000:100
	// core: SubWindows 7: the period 1m0s is not a whole number of nanoseconds times 7; pick a number of sub-windows that divides it
}

// The sliding log's entries per key are capped by the policy's
// MaxEntries, as in memory.
func ExampleNew_slidingLog() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	_, err := redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog))
	fmt.Println(err)
	lim, err := redisstore.New(rdb, core.PerHour(5000).WithAlgorithm(core.SlidingLog).WithMaxEntries(5000))
	fmt.Println(lim.Key("203.0.113.7"), err)
	// Output:
	// core: SlidingLog: 5000 events per period need up to 5000 log entries per key (16 bytes each), more than MaxEntries allows (1024); raise the cap with WithMaxEntries(5000) or use SlidingWindow (with sub-windows for a closer count)
	// floodgate:{203.0.113.7}:sl:5000/3600000000000:5000 <nil>
}

// A shaper on Redis: requests for a key take turns 100 ms apart across
// every instance, each admitted with the Delay of its turn, up to 250 ms.
// Building it contacts no server; its key carries the longest wait, and
// settings that do not fit the algorithm are refused, as in core.
func ExampleNew_leakyBucket() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerSecond(10).WithMaxDelay(250*time.Millisecond))
	fmt.Println(lim.Key("203.0.113.7"))

	_, err = redisstore.New(rdb, core.PerSecond(10).WithMaxDelay(250*time.Millisecond).WithAlgorithm(core.TokenBucket))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerSecond(10).WithAlgorithm(core.WarmUp))
	fmt.Println(err)
	// Output:
	// floodgate:{203.0.113.7}:lb:10/1000000000:10:250000000
	// core: MaxDelay applies to LeakyBucket only, not token-bucket
	// core: limit WarmUp 0s: the WarmUp algorithm needs a warm-up period > 0 and <= 640511h56m49.213693951s, for example PerSecond(100).WithWarmUp(10*time.Second, 3)
}
