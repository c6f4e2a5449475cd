//go:build !race

package coretest

// Race reports whether the race detector is on: it slows every test
// several times, and it makes sync.Pool drop some of what is put back,
// so that a pooled path allocates now and then.
const Race = false
