package tally_test

import (
	"fmt"

	"github.com/floodgate/floodgate/internal/tally"
)

// Counting events over a window of 10 s (buckets of 1 s) on a clock in
// seconds: what the window holds at second 12 is what came from second 3
// on; the bucket of second 1 has left it.
func Example() {
	const width = 1 // s
	var w tally.Window
	for _, at := range []int64{1, 1, 5, 12, 12, 12} {
		w.Add(tally.Bucket(at, width))
	}
	n := tally.Bucket(12, width)
	var total uint64
	for i := range int64(tally.Buckets) {
		total += w.Count(n - i)
	}
	fmt.Println(total)
	// Output: 4
}
