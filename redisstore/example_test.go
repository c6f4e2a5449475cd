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
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerMinute(100), redisstore.WithPrefix("api:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lim.Key("203.0.113.7"))

	_, err = redisstore.New(rdb, core.Limit{Events: 1, Period: 90 * 24 * time.Hour}, redisstore.WithAlgorithm(core.FixedWindow))
	fmt.Println(err != nil)
	// Output:
	// api:{203.0.113.7}:tb:100/60000000000:100
	// true
}

// A shaper on Redis: requests for a key take turns 100 ms apart across
// every instance, each admitted with the Delay of its turn, up to 250 ms.
// Building it contacts no server; its key carries the longest wait, and
// settings that do not fit the algorithm are refused, as in core.
func ExampleWithMaxDelay() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer rdb.Close()

	lim, err := redisstore.New(rdb, core.PerSecond(10),
		redisstore.WithAlgorithm(core.LeakyBucket), redisstore.WithMaxDelay(250*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lim.Key("203.0.113.7"))

	_, err = redisstore.New(rdb, core.PerSecond(10), redisstore.WithMaxDelay(250*time.Millisecond))
	fmt.Println(err)
	_, err = redisstore.New(rdb, core.PerSecond(10), redisstore.WithAlgorithm(core.WarmUp))
	fmt.Println(err)
	// Output:
	// floodgate:{203.0.113.7}:lb:10/1000000000:10:250000000
	// redisstore: WithMaxDelay applies to LeakyBucket only, not token-bucket
	// redisstore: WarmUp needs WithWarmUp(period, coldFactor), for example WithWarmUp(10*time.Second, 3)
}
