// Package tally counts events over a sliding window of a clock without a
// lock and without sweeping: the window is cut into [Buckets] buckets of
// equal width, and each bucket is one atomic word of a [Window] that
// holds both its count and which bucket it counts. internal/breaker
// counts a store's successes and failures with it, overload.Throttle
// the requests a client sent and how they ended; overload.BBR's window
// numbers its buckets with [Bucket].
//
// A caller reads its clock once, turns the instant into a bucket number
// with [Bucket], and counts in that bucket or reads the window whose
// newest bucket it is:
//
//	n := tally.Bucket(clock.Now(), width)
//	sent.Add(n)
//	...
//	var total uint64
//	for i := range int64(tally.Buckets) {
//		total += sent.Count(n - i)
//	}
//
// A bucket's count vanishes as soon as a later bucket takes its word, or
// a read asks for another bucket: nothing has to clear old buckets. The
// price is that a count in a bucket its word has already moved past (a
// caller that read the clock before another one moved on) is dropped,
// which [Window.Add] reports.
package tally
