// Package retry holds the retry arithmetic that the client sides of
// floodgate share: grpcmw's client interceptors and httpclient's
// transports. A [Policy] is the knobs both expose under the same names
// (WithMaxAttempts, WithBackoff, WithMaxWait, WithRand, WithSleep) with the
// same validation, and [Policy.Wait] turns a server's retry delay into the
// wait before a retry: the delay plus full jitter over a capped exponential
// backoff, or no retry at all when the delay is too long or reaches the
// context's deadline.
//
// It imports neither net/http nor gRPC, so that each client side compiles
// only its own transport.
package retry
