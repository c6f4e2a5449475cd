//go:build race

package redisstore_test

// raceOn: the race detector slows every worker of a fleet test several
// times, which the lower bounds of its real-time checks allow for.
const raceOn = true
