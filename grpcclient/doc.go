// Package grpcclient holds gRPC client interceptors that wait out
// rate-limit refusals: a call refused with ResourceExhausted and a retry
// delay (a google.rpc.RetryInfo detail, as grpcmw sends, or
// grpc-retry-pushback-ms in the trailer) is tried again after the server's
// delay plus capped exponential backoff with full jitter, never past the
// call's deadline, up to WithMaxAttempts tries in all.
//
//	retry, err := grpcclient.UnaryClientInterceptor(grpcclient.WithMaxAttempts(3))
//	...
//	cc, err := grpc.NewClient(target, grpc.WithChainUnaryInterceptor(retry), ...)
//
// With WithThrottle, the interceptors also ask an overload.Throttle
// (Google SRE's client-side adaptive throttling) before each attempt:
// once the backend refuses too many calls, they reject some locally,
// unsent, with status UNAVAILABLE and an error matching
// overload.ErrThrottled.
//
// [RetryDelay] reads the delay from a status error for callers that retry
// by hand. The options have the names, defaults and meaning of package
// httpclient's, which does the same for HTTP (Retry-After); both share one
// implementation.
package grpcclient
