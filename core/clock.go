package core

import "time"

// Clock reads the time as nanoseconds since the Unix epoch. Limiters read it
// once per decision. It must be safe for concurrent use; it should not step
// backwards, and if it does, no limiter hands out quota for the step.
//
// The default clock ([SystemClock]) is monotonic: it reads the wall clock once
// at start-up and adds monotonic time elapsed since, so that it costs one
// monotonic read per call and ignores wall-clock jumps.
//
// A test clock is a few lines of your own; this module's is internal
// (internal/coretest), so it cannot be imported. One that moves only when
// told to:
//
//	type testClock struct{ ns atomic.Int64 }
//
//	func (c *testClock) Now() int64 { return c.ns.Load() }
//	func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
//
//	clock := &testClock{}
//	clock.ns.Store(time.Unix(0, 0).UnixNano())
//	lim, err := core.New(core.PerSecond(10), core.WithClock(clock))
//
// [WithClock]'s example runs it.
type Clock interface {
	Now() int64
}

// SystemClock is the default Clock: Unix nanoseconds, advanced by the
// monotonic clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

var (
	startWall = time.Now()
	startUnix = startWall.UnixNano()
)

// Now returns the Unix time in nanoseconds, advanced monotonically.
func (systemClock) Now() int64 { return systemNow() }

// systemNow is SystemClock's reading, callable without an interface.
func systemNow() int64 { return startUnix + int64(time.Since(startWall)) }
