// Package benchmarks measures floodgate against other Go rate limiters in the
// same run, under one policy (100 requests a second, burst 100, per key) and
// one harness, so that every implementation sees the same machine state; and,
// on a local redis-server it starts, floodgate's redisstore against the
// Redis-backed peers and against PING.
//
// It is a separate module so that the libraries it measures never enter
// floodgate's own go.mod; the root module's `go test ./...` does not descend
// into it. See README.md for how to run it and what it measured.
package benchmarks
