package slogobs

// WithClock sets the clock of the sampler's one-second windows, for
// tests that step through seconds.
var WithClock = withClock
