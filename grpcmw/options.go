package grpcmw

import (
	"context"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Option configures a Limiter made by New (and the interceptor shorthands
// built on it).
type Option func(*options)

// CostFunc says how many units a call spends. 0 means the call is free: it
// proceeds, is not counted and gets no rate-limit metadata. An error
// wrapping core.ErrInvalidCost means the call itself is at fault (answered
// InvalidArgument); any other error, or a negative cost, means the function
// could not price it (Internal).
type CostFunc func(ctx context.Context, fullMethod string) (int, error)

// SkipFunc reports whether a call is exempt from limiting.
type SkipFunc func(ctx context.Context, fullMethod string) bool

// ErrorHook is told about every call for which no decision could be made,
// whatever the call is then answered: tell the cases apart with errors.Is
// (core.ErrBadKey, core.ErrKey, core.ErrCost, core.ErrInvalidCost,
// core.ErrStore, core.ErrWaitCanceled). It is for logs; the error's text
// may hold internal details and is never sent to the client. WithObserver
// hears of every call, errors included.
type ErrorHook func(ctx context.Context, fullMethod string, err error)

// FailureMode says what a call gets when the store fails (errors.Is(err,
// core.ErrStore)); it is core.FailureMode, shared with httpmw, and its
// values mean the same on both transports.
type FailureMode = core.FailureMode

const (
	// FailClosed, the default, refuses the call with ResourceExhausted,
	// MessageUnavailable, a RetryInfo of one second and ErrorInfo reason
	// ReasonUnavailable, as httpmw answers 429 with Retry-After: 1. Not
	// Unavailable: the server is up, it only cannot account for the call,
	// and gRPC clients configured to retry (and load balancers counting
	// failures) treat Unavailable as "retry at once, elsewhere", while
	// ResourceExhausted with RetryInfo asks them to back off.
	FailClosed = core.FailClosed
	// FailOpen admits the call, without rate-limit metadata since no
	// decision was made. The ErrorHook and the Observer still hear of the
	// failure.
	FailOpen = core.FailOpen
)

// HeaderStyle selects which rate-limit fields go into response header
// metadata; it is core.HeaderStyle, shared with httpmw: the same fields and
// values.
type HeaderStyle = core.HeaderStyle

// The header styles (see core.HeaderStyle).
const (
	HeadersBoth   = core.HeadersBoth
	HeadersLegacy = core.HeadersLegacy
	HeadersIETF   = core.HeadersIETF
	HeadersNone   = core.HeadersNone
)

type options struct {
	methods  map[string]*methodConf
	cost     CostFunc
	skip     SkipFunc
	hook     ErrorHook
	observer core.Observer
	failure  FailureMode
	headers  HeaderStyle
	// headersSet reports WithHeaders given, which shadow mode needs to
	// send the rate-limit fields at all.
	headersSet bool
	shadow     bool
	meter      bool
	infra      bool // health and reflection are limited too
	pick       func(ctx context.Context, fullMethod string) core.Limiter
	hold       pipeline.Hold
	// refundInner records each admission's charge in the call's context
	// (WithRefundOnInnerRefusal).
	refundInner bool
	errs        option.Errors
}

// methodConf is what options say about one method.
type methodConf struct {
	lim    core.Limiter // nil: the default limiter
	cost   int          // 0: the cost function, or 1
	exempt bool
}

// method returns the configuration of fullMethod, creating it, or nil after
// recording an error when fullMethod is not of the form
// "/package.Service/Method".
func (o *options) method(opt, fullMethod string) *methodConf {
	if !o.errs.Require(validMethod(fullMethod),
		"%s: %q is not a full method name; write it as grpc reports it, \"/package.Service/Method\"", opt, fullMethod) {
		return nil
	}
	if o.methods == nil {
		o.methods = make(map[string]*methodConf)
	}
	m := o.methods[fullMethod]
	if m == nil {
		m = &methodConf{}
		o.methods[fullMethod] = m
	}
	return m
}

// validMethod accepts what grpc passes as info.FullMethod:
// "/package.Service/Method".
func validMethod(s string) bool {
	svc, meth, ok := strings.Cut(strings.TrimPrefix(s, "/"), "/")
	return strings.HasPrefix(s, "/") && ok && svc != "" && meth != "" && !strings.Contains(meth, "/")
}

// WithMethodLimiter limits calls to one method with lim instead of the
// default limiter: a login method with a stricter policy, an expensive
// export with its own. fullMethod is written as grpc reports it,
// "/package.Service/Method". The key function and options are shared.
func WithMethodLimiter(fullMethod string, lim core.Limiter) Option {
	return func(o *options) {
		m := o.method("WithMethodLimiter", fullMethod)
		if m != nil &&
			o.errs.Require(lim != nil, "WithMethodLimiter(%q): nil core.Limiter", fullMethod) &&
			o.errs.Require(m.lim == nil, "WithMethodLimiter(%q): method given two limiters", fullMethod) {
			m.lim = lim
		}
	}
}

// WithMethodCost makes every call to one method spend cost units, ahead of
// any WithCost function. cost must be at least 1.
func WithMethodCost(fullMethod string, cost int) Option {
	return func(o *options) {
		m := o.method("WithMethodCost", fullMethod)
		if m != nil && o.errs.Require(cost >= 1, "WithMethodCost(%q, %d): cost must be at least 1", fullMethod, cost) {
			m.cost = cost
		}
	}
}

// WithCost sets how many units a call spends, for methods without a
// WithMethodCost (default: 1, without calling any function).
func WithCost(f CostFunc) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithCost(nil); leave the option out for a cost of 1") {
			o.cost = f
		}
	}
}

// WithExempt exempts methods from limiting (an internal admin method, a
// cheap status call): their calls are neither counted nor limited and get
// no rate-limit metadata. The health and reflection services are exempt
// already unless WithLimitedInfrastructure says otherwise.
func WithExempt(fullMethods ...string) Option {
	return func(o *options) {
		for _, fm := range fullMethods {
			if m := o.method("WithExempt", fm); m != nil {
				m.exempt = true
			}
		}
	}
}

// WithLimitedInfrastructure limits the gRPC health service
// (grpc.health.v1.Health) and server reflection
// (grpc.reflection.v1.ServerReflection and its v1alpha) like any other
// service. By default they are exempt: a load balancer's health checks and
// a developer's grpcurl should not spend a client's quota or be refused
// during an overload, when health answers matter most.
func WithLimitedInfrastructure() Option {
	return func(o *options) { o.infra = true }
}

// WithSkip exempts the calls for which f returns true, as WithExempt does
// for whole methods. f runs on every call before the key function, so keep
// it cheap.
func WithSkip(f SkipFunc) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithSkip(nil); leave the option out to limit every call") {
			o.skip = f
		}
	}
}

// WithFailureMode sets what a call gets when the store fails (default
// FailClosed).
func WithFailureMode(m FailureMode) Option {
	return func(o *options) {
		if o.errs.Require(m.Valid(), "WithFailureMode: unknown mode %d; use FailClosed or FailOpen", int(m)) {
			o.failure = m
		}
	}
}

// WithErrorHook sets a function told about every call for which no decision
// could be made (default: none).
func WithErrorHook(h ErrorHook) Option {
	return func(o *options) {
		if o.errs.Require(h != nil, "WithErrorHook(nil); leave the option out for no hook") {
			o.hook = h
		}
	}
}

// WithObserver sets the observer every checked call, and every metered
// message, is reported to (default: none, which costs nothing). See
// core.Observer; events carry Transport "grpc".
func WithObserver(obs core.Observer) Option {
	return func(o *options) {
		if o.errs.Require(obs != nil, "WithObserver(nil); leave the option out for no observer") {
			o.observer = obs
		}
	}
}

// WithHeaders sends its style's rate-limit fields in header metadata on every
// limited call (default: both styles, only on refusals and near the limit, see
// the package documentation; none in shadow mode); retry-after on every denial.
func WithHeaders(s HeaderStyle) Option {
	return func(o *options) {
		if o.errs.Require(s.Valid(), "WithHeaders: unknown style %d; use HeadersBoth, HeadersLegacy, HeadersIETF or HeadersNone", int(s)) {
			o.headers, o.headersSet = s, true
		}
	}
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
	return func(o *options) { o.shadow = true }
}

// WithMeterMessages makes the stream interceptor charge every message a
// client sends on a limited stream (each RecvMsg that returns a message
// costs 1, against the stream method's limiter and the key found when the
// stream opened), on top of the check when the stream opens. Without it a
// client could hold one admitted stream open and send without limit.
// A message that is refused makes RecvMsg return the same ResourceExhausted
// status a refused call gets (the message is dropped); the stream's
// trailer carries one grpc-retry-pushback-ms, the latest refusal's. Header
// metadata has usually been sent by then, so it is not updated.
func WithMeterMessages() Option {
	return func(o *options) { o.meter = true }
}

// infraService reports whether fullMethod belongs to the health or
// reflection service.
func infraService(fullMethod string) bool {
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
// decides the call (a stricter policy for writes than for reads, a larger
// one for paid API keys), or nil for the method's (WithMethodLimiter) or
// the default one. It runs after the key and cost functions, only for
// calls that are charged, so keep it cheap: pick among limiters made
// once. A metered stream's messages are charged to the limiter chosen
// when it opened.
func WithLimiterFunc(f func(ctx context.Context, fullMethod string) core.Limiter) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithLimiterFunc(nil); leave the option out to use the method's or the default limiter") {
			o.pick = f
		}
	}
}

// WithDenialHold holds each refusal up to max before answering it, never
// longer than the refusal's RetryAfter, and less if the call's context
// ends first: clients that retry as soon as they are refused then retry
// less often. At most concurrent refusals are held at once; beyond that
// they are answered at once, so that a flood of refused calls cannot tie
// up the server. A refused message of a metered stream is held too.
// Default: off. The observer's core.Event.Held says how long a refusal was
// held. Only denials are held; errors and store failures are answered at
// once. max must be positive and concurrent at least 1; httpmw's option
// of the same name behaves the same.
func WithDenialHold(max time.Duration, concurrent int) Option {
	return func(o *options) {
		h := pipeline.Hold{Max: max, Concurrent: concurrent}
		if p := h.Problem(); o.errs.Require(p == "", "WithDenialHold(%v, %d): %s", max, concurrent, p) {
			o.hold = h
		}
	}
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
	return func(o *options) { o.refundInner = true }
}
