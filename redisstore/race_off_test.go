//go:build !race

package redisstore_test

// raceOn: see race_on_test.go.
const raceOn = false
