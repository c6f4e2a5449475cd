// Package grpcmw puts floodgate limiters in front of gRPC methods: unary and
// stream server interceptors, key functions for gRPC calls, and a bridge to
// go-grpc-middleware v2's ratelimit package. It is the server side only:
// package grpcclient holds the client interceptors that wait and retry
// when a server asks them to.
//
// A Limiter pairs a core.Limiter with a key function, which is required so
// that every call site says what it limits by:
//
//	lim, err := core.New(core.PerSecond(100).WithName("api"))
//	...
//	l, err := grpcmw.New(lim, grpcmw.MustKeyByPeerIP())
//	...
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
//		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
//	)
//
// To limit some methods and not others, give New no limiter and choose
// one per call; a nil choice leaves a method unlimited:
//
//	l, err := grpcmw.New(nil, grpcmw.MustKeyByPeerIP(),
//		grpcmw.WithLimiterFunc(func(_ context.Context, m string) core.Limiter {
//			if m == "/auth.Auth/Login" {
//				return loginLimiter
//			}
//			return nil
//		}))
//
// The options that httpmw has too (WithSkip, WithCost, WithFailureMode,
// WithHeaders, WithObserver, WithDenialHold, WithRefundOnInnerRefusal,
// WithLimiterFunc, WithShadow) have the same names and meaning there; the
// failure modes and header styles are core's (core.FailOpen,
// core.HeadersIETF).
//
// # What calls get
//
// The health service (grpc.health.v1.Health) and server reflection are
// skipped by default (SkipInfrastructure), so that load balancers' health
// checks and grpcurl spend no quota and are never refused; a WithSkip
// function replaces that default, and WithSkip(nil) limits every call.
//
// A refused call, and an admitted one that leaves at most a tenth of its
// policy's burst (Events when Burst is 0), carries the rate-limit fields in
// its response header metadata, with the values httpmw writes in HTTP
// headers for the same core.Decision (one formatter serves both):
// x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset,
// ratelimit-policy and ratelimit, and on a refusal retry-after. Other
// admitted calls carry none: gRPC clients rarely read rate-limit metadata
// on success, and five fields on every call cost more than the decision
// (grpc joins and encodes each; about 4 µs and 18 allocations a call).
// WithHeaders sends the fields of its style on every limited call, as
// httpmw does with headers (WithHeaders(HeadersBoth): all five);
// retry-after goes with every refusal whatever the style.
//
// A call an overload guard shed (core.Decision.Shed: the service, not
// the caller's quota, is short) ends with codes.Unavailable, the fixed
// message "service overloaded, retry later", a RetryInfo and an ErrorInfo
// whose reason is ReasonOverloaded, and retry-after alone in the
// metadata. An admitted call's concurrency lease is told how the call
// ended (core.Ending): dropped when its handler returned
// DeadlineExceeded, Unavailable or ResourceExhausted, done otherwise, a
// cancelled call included (its latency still measures the service).
//
// A refused call ends with codes.ResourceExhausted, the fixed message
// "rate limit exceeded", and three details:
//
//   - google.rpc.RetryInfo: retry_delay is the Decision's exact RetryAfter
//     (never 0), the wait after which the same call can succeed. HTTP's
//     Retry-After is the same delay rounded up to whole seconds.
//   - google.rpc.QuotaFailure: one violation whose subject is the policy's
//     name as the rate-limit fields send it ("default" when unnamed; a
//     custom limiter's name that core would refuse is made printable ASCII
//     and cut to fit, as httpmw documents) and whose description is the policy
//     ("100 per 1m0s"). The key, which can be the client's address or API
//     key, is never sent back.
//   - google.rpc.ErrorInfo: reason ReasonRateLimited, domain Domain, and
//     metadata policy, limit and remaining. The reason tells a rate-limit
//     refusal from the other causes of ResourceExhausted, such as a message
//     over the size limit.
//
// Its trailer carries grpc-retry-pushback-ms, the delay in milliseconds
// rounded up, which grpc-go's own retry policy honours.
//
// # When no decision can be made
//
// The client's faults and the server's are told apart, as httpmw does: a
// call without a usable key (missing metadata, a malformed gateway header:
// core.ErrBadKey) is codes.InvalidArgument; an invalid cost is
// InvalidArgument too, and a cost the limit can never admit says that
// retrying will not help; a key or cost function
// that fails on the server's side is codes.Internal with a fixed message,
// never the error's text; a store failure follows the failure mode: refused
// with ResourceExhausted, a one-second RetryInfo and ErrorInfo reason
// ReasonUnavailable by default, admitted under core.FailOpen. A cost of 0
// means free. WithObserver hears of every call and metered message,
// admitted, refused or failed, with the error (core.Event.Err).
//
// # Streams
//
// A stream is checked once, when it opens. WithMeterMessages also charges
// every message the client sends on it, so that one admitted stream cannot
// carry unlimited traffic; its trailer then carries one
// grpc-retry-pushback-ms, the latest refusal's.
//
// # Shaping
//
// A core.Limiter that shapes traffic admits a call with a delay; the
// interceptor holds the call that long, and if its context ends first it
// refunds the units and ends the call with the context's status.
//
// # Concurrency limits, layers, stacks and choices
//
// A concurrency limiter admits a call with a core.Lease, its slot among the
// calls in flight. A unary call gives it back when its handler returns or
// panics; a stream when its handler returns, which is when the stream
// ends; a metered stream's message (WithMeterMessages) at the next RecvMsg
// or the end of the stream; a shaped call whose context ends while it
// waits, at once. Releases run under a context that is not cancelled.
//
// Interceptors nest: a global Limiter first in the chain and a stricter
// one for a login method after it both charge a login. With
// WithRefundOnInnerRefusal on the outer one, a call the inner one refuses
// gives the outer charge back, for unary calls and streams alike (httpmw's
// option of the same name does it for HTTP middlewares). grpc merges the
// header metadata both set; the inner's values come last.
//
// A limiter that enforces several limits at once (core.PolicyLister) has
// every policy listed in ratelimit-policy, in order, while ratelimit and
// x-ratelimit-* describe the one that decided (Decision.Limit).
// WithLimiterFunc chooses the limiter per call (reads and writes, free and
// paid keys); WithDenialHold holds refusals briefly before answering, so
// that clients retrying in a tight loop retry less often.
//
// # Shadow mode
//
// Under WithShadow every call is decided, charged and observed
// (core.Event.Shadow), never enforced: every call and every metered
// message goes on, whatever the decision, the store or the key; the
// response metadata carries the rate-limit fields only when WithHeaders is
// given too, and never retry-after or a pushback. The same holds through
// [Limiter.Limit], the go-grpc-middleware bridge.
//
// # go-grpc-middleware
//
// A *Limiter is a go-grpc-middleware v2 ratelimit.Limiter (its Limit
// method), for interceptor chains already built on that package. Their
// interceptor replaces the status this package returns with one of its
// own, whose message holds the method and the error's text: the details
// above are lost. This package's interceptors keep them.
package grpcmw
