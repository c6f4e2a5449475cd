//go:build race

package redistest

// Race reports whether the race detector is on, which multiplies the CPU
// every test takes several times.
const Race = true
