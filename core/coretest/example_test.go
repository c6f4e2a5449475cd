package coretest_test

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/core/coretest"
)

func ExampleClock() {
	clock := coretest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	clock.Advance(90 * time.Second)
	fmt.Println(clock.Time().UTC().Format(time.TimeOnly), clock.Now())
	// Output: 03:05:35 1767323135000000000
}
