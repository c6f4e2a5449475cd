// Package httpclient is the client side of rate limiting over HTTP: two
// http.RoundTripper wrappers for services that call rate-limited APIs.
//
// NewLimitedTransport holds outbound requests to a core.Limiter of the
// client's own (by default one quota per host): a request the limiter
// refuses waits its RetryAfter, a shaped admission waits its Delay, and a
// request that would wait longer than WithMaxWait fails unsent with an
// error wrapping ErrLimited. A concurrency limit's slot is held until the
// response body is read or closed.
//
// NewRetryTransport sends a request again when the server answers 429 or
// 503: after the Retry-After the response gives (delta-seconds or an
// HTTP-date), else the wait of an exhausted policy in the IETF RateLimit
// fields (r=0: wait t seconds), plus full jitter over a capped exponential
// backoff. It retries only idempotent requests (or ones with an
// Idempotency-Key) whose body can be replayed through GetBody, bounds the
// attempts, each wait and their total (WithMaxWait), drains the responses
// it discards, and stops waiting as soon as the request's context ends.
// Its options have the names, defaults and meaning of package
// grpcclient's.
//
// Put the retry outside the limiter, so that every retry asks the limiter
// again:
//
//	lim, _ := core.New(core.PerSecond(10))
//	limited, _ := httpclient.NewLimitedTransport(http.DefaultTransport, lim, nil)
//	retrying, _ := httpclient.NewRetryTransport(limited, httpclient.WithMaxAttempts(4))
//	client := &http.Client{Transport: retrying}
//
// With WithThrottle, NewRetryTransport also asks an overload.Throttle
// (Google SRE's client-side adaptive throttling) before each attempt:
// once the backend refuses too many requests, it rejects some locally,
// unsent, with an error matching overload.ErrThrottled.
//
// The headers it reads are those httpmw writes: Retry-After, RateLimit
// ("name";r=…;t=…) and RateLimit-Policy ("name";q=…;w=…), parsed as
// Structured Fields (RFC 9651); malformed fields are ignored. The package
// imports neither gRPC nor any web framework.
package httpclient
