//go:build race

package overload

// raceBuild reports a build with the race detector, under which the
// queueing models run shorter (it slows them tenfold).
const raceBuild = true
