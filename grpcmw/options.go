package grpcmw

import (
	"context"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures a Limiter made by New. The options httpmw has too
// (WithSkip, WithCost, WithFailureMode, WithHeaders, WithObserver,
// WithDenialHold, WithRefundOnInnerRefusal, WithLimiterFunc, WithShadow)
// have the same names and the same meaning there.
type Option func(*options)

type options struct {
	option.Adapter[call]
	meter bool
	// skip is the WithSkip function, SkipInfrastructure or skipNothing,
	// never nil. The interceptors call it before the pipeline, so that a
	// skipped call costs one call of it.
	skip func(ctx context.Context, fullMethod string) bool
}

// onCall turns a function of a call's context and full method into one of
// the pipeline's call, keeping nil nil.
func onCall[T any](f func(context.Context, string) T) func(call) T {
	if f == nil {
		return nil
	}
	return func(c call) T { return f(c.ctx, c.method) }
}

// WithSkip exempts the calls for which f returns true: they are neither
// counted nor limited and get no rate-limit metadata. f runs on every call
// before anything else, so keep it cheap. It replaces the default,
// [SkipInfrastructure], which skips the health and reflection services.
// A nil f skips nothing, as in httpmw.WithSkip and echomw.WithSkip: every
// call is limited, health checks and reflection too,
//
//	grpcmw.WithSkip(nil)
//
// and to skip calls of your own beside the infrastructure, call
// SkipInfrastructure from f:
//
//	grpcmw.WithSkip(func(ctx context.Context, m string) bool {
//		return m == "/admin.v1.Admin/Drain" || grpcmw.SkipInfrastructure(ctx, m)
//	})
func WithSkip(f func(ctx context.Context, fullMethod string) bool) Option {
	// Decided here, not in the option: one Option may be applied by
	// several New calls at once, which must not write what it captured.
	if f == nil {
		f = skipNothing
	}
	return func(o *options) { o.skip = f }
}

// skipNothing is WithSkip(nil)'s function: the interceptors call the skip
// function on every call, so that one with nothing to skip costs what any
// other does.
func skipNothing(context.Context, string) bool { return false }

// WithCost sets how many units a call spends (default: 1, without calling
// any function); f can price each method its own way. 0 means the call is
// free: it proceeds, is not counted and gets no rate-limit metadata. An
// error wrapping core.ErrInvalidCost means the call itself is at fault
// (InvalidArgument); any other error, or a negative cost, means the
// function could not price it (Internal).
func WithCost(f func(ctx context.Context, fullMethod string) (int, error)) Option {
	return func(o *options) {
		var cost func(call) (int, error)
		if f != nil {
			cost = func(c call) (int, error) { return f(c.ctx, c.method) }
		}
		o.Cost(cost)
	}
}

// WithFailureMode sets what a call gets when the store fails (default
// core.FailClosed: ResourceExhausted with a RetryInfo of one second, as
// httpmw answers 429 with Retry-After: 1; core.FailOpen admits it, without
// rate-limit metadata, and the Observer hears of the failure).
func WithFailureMode(m core.FailureMode) Option {
	return func(o *options) { o.FailureMode(m) }
}

// WithObserver sets the observer every checked call, and every metered
// message, is reported to, errors included (default: none, which costs
// nothing). See core.Observer; events carry Transport "grpc".
func WithObserver(obs core.Observer) Option {
	return func(o *options) { o.Observer(obs) }
}

// WithHeaders sends its style's rate-limit fields in header metadata on every
// limited call (default: both styles, only on refusals and near the limit, see
// the package documentation; none in shadow mode); retry-after on every denial.
func WithHeaders(s core.HeaderStyle) Option {
	return func(o *options) { o.HeaderStyle(s) }
}

// WithShadow runs the limiter in shadow (dry-run) mode, to measure a new
// limit on real traffic before enforcing it: every call and every metered
// message is decided, charged and observed as enforcing would
// (core.Event.Shadow), and goes on whatever the outcome, with no shaping
// wait and no held denial; neither a store error nor a bad key or cost
// stops it. What enforcing would charge is charged: an admission as usual,
// a shaped one keeps its units reserved, a refusal and an error charge
// nothing, and WithRefundOnInnerRefusal records only the admissions
// enforcing would have made. The response metadata carries no rate-limit
// fields unless WithHeaders is given too, and never retry-after or a
// pushback. The same holds through [Limiter.Limit], the go-grpc-middleware
// bridge. To enforce one limit and measure another, chain two
// interceptors, the shadow one first.
func WithShadow() Option {
	return func(o *options) { o.Shadow() }
}

// WithMeterMessages makes the stream interceptor charge every message a
// client sends on a limited stream (each RecvMsg that returns a message
// costs 1, against the limiter and the key found when the stream opened),
// on top of the check when the stream opens. Without it a client could
// hold one admitted stream open and send without limit. A message that is
// refused makes RecvMsg return the same ResourceExhausted status a refused
// call gets (the message is dropped); the stream's trailer carries one
// grpc-retry-pushback-ms, the latest refusal's. Header metadata has
// usually been sent by then, so it is not updated.
func WithMeterMessages() Option {
	return func(o *options) { o.meter = true }
}

// SkipInfrastructure reports whether fullMethod belongs to the gRPC health
// service (grpc.health.v1.Health) or server reflection
// (grpc.reflection.v1.ServerReflection and its v1alpha). It is the default
// skip function: a load balancer's health checks and a developer's
// grpcurl should not spend a client's quota or be refused during an
// overload, when health answers matter most. Call it from a WithSkip
// function to keep skipping them.
func SkipInfrastructure(_ context.Context, fullMethod string) bool {
	const p = "/grpc."
	if !strings.HasPrefix(fullMethod, p) {
		return false
	}
	svc, _, _ := strings.Cut(fullMethod[len(p):], "/")
	switch svc {
	case "health.v1.Health", "reflection.v1.ServerReflection", "reflection.v1alpha.ServerReflection":
		return true
	}
	return false
}

// WithLimiterFunc chooses the limiter per call: f returns the limiter that
// decides the call (a strict one for a login method, a larger one for paid
// API keys), or nil when the call is not limited. Give New a nil limiter
// with it, so that a service can limit one method without a default limit
// for all the others:
//
//	grpcmw.New(nil, grpcmw.MustKeyByPeerIP(), grpcmw.WithLimiterFunc(
//		func(_ context.Context, m string) core.Limiter {
//			if m == "/auth.v1.Auth/Login" {
//				return login
//			}
//			return nil // not limited
//		}))
//
// It runs after the skip function and before the key and cost functions,
// on every call, so keep it cheap: pick among limiters made once. A
// metered stream's messages are charged to the limiter chosen when it
// opened. Every limiter it returns gets the same key, cost and options.
func WithLimiterFunc(f func(ctx context.Context, fullMethod string) core.Limiter) Option {
	return func(o *options) { o.LimiterFunc(onCall(f)) }
}

// WithDenialHold holds each refusal up to max before answering it, never
// longer than the refusal's RetryAfter, and less if the call's context
// ends first: clients that retry as soon as they are refused then retry
// less often. At most concurrent refusals are held at once; beyond that
// they are answered at once, so that a flood of refused calls cannot tie
// up the server. A refused message of a metered stream is held too.
// Default: off. The observer's core.Event.Held says how long a refusal was
// held. Only denials are held; errors and store failures are answered at
// once. max must be positive and concurrent at least 1.
func WithDenialHold(max time.Duration, concurrent int) Option {
	return func(o *options) { o.DenialHold(max, concurrent) }
}

// WithRefundOnInnerRefusal makes this Limiter, when it sits outside
// another floodgate in an interceptor chain (a global limiter first, a
// stricter one for a login method after it), give back what it charged a
// call that the inner one refuses, so that a client refused by the inner
// limiter keeps its outer quota. It records each admission's key, cost and
// limiter in the call's context; the inner floodgate (grpcmw, or httpmw,
// ginmw and echomw for HTTP) refunds every charge recorded there when it
// does not admit the call (a denial, a store failure under FailClosed, a
// bad key or cost), through core.Limiter.Refund or by releasing the
// concurrency slot of a Decision.Lease. Default: off.
//
// Set it on the outer Limiter; the inner needs nothing. It costs each
// admitted call one small allocation (a stream two), which is why it is
// not the default. The go-grpc-middleware bridge (Limit) records nothing.
func WithRefundOnInnerRefusal() Option {
	return func(o *options) { o.RefundOnInnerRefusal() }
}
