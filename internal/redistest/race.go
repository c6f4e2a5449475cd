//go:build race

package redistest

// raceDetector reports whether the race detector is on.
const raceDetector = true
