package debugpage

// WithClock sets the clock the per-second counts read, for tests that step
// through seconds.
var WithClock = withClock
