package grpcmw

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
)

// Option configures a Limiter made by New (and the interceptor shorthands
// built on it).
type Option func(*options)

// CostFunc says how many units a call spends. It returns an error wrapping
// core.ErrInvalidCost when the call itself is at fault (answered
// InvalidArgument), any other error when it could not decide (Internal).
type CostFunc func(ctx context.Context, fullMethod string) (int, error)

// SkipFunc reports whether a call is exempt from limiting.
type SkipFunc func(ctx context.Context, fullMethod string) bool

// ErrorHook is told about every call for which no decision could be made,
// whatever the call is then answered: tell the cases apart with errors.Is
// (core.ErrKey, core.ErrCost, core.ErrInvalidCost, core.ErrStore, core.ErrWaitCanceled).
// It is for logs and metrics; the error's text may hold internal details and
// is never sent to the client.
type ErrorHook func(ctx context.Context, fullMethod string, err error)

// FailureMode says what a call gets when the store fails (errors.Is(err,
// core.ErrStore)): the modes of httpmw, with the same meaning. Key and cost
// failures are never admitted, whatever the mode: they are bugs or bad
// requests, not outages.
type FailureMode = httpmw.FailureMode

const (
	// FailClosed, the default, refuses the call with ResourceExhausted,
	// MessageUnavailable, a RetryInfo of one second and ErrorInfo reason
	// ReasonUnavailable, as httpmw answers 429 with Retry-After: 1. Not
	// Unavailable: the server is up, it only cannot account for the call,
	// and gRPC clients configured to retry (and load balancers counting
	// failures) treat Unavailable as "retry at once, elsewhere", while
	// ResourceExhausted with RetryInfo asks them to back off.
	FailClosed = httpmw.FailClosed
	// FailOpen admits the call, without rate-limit metadata since no
	// decision was made. The ErrorHook still hears of the failure.
	FailOpen = httpmw.FailOpen
)

// HeaderStyle selects which rate-limit fields go into response header
// metadata: the styles of httpmw, with the same fields and values.
type HeaderStyle = httpmw.HeaderStyle

// The header styles (see httpmw's for what each writes).
const (
	HeadersBoth   = httpmw.HeadersBoth
	HeadersLegacy = httpmw.HeadersLegacy
	HeadersIETF   = httpmw.HeadersIETF
	HeadersNone   = httpmw.HeadersNone
)

type options struct {
	methods map[string]*methodConf
	cost    CostFunc
	skip    SkipFunc
	hook    ErrorHook
	failure FailureMode
	headers httpmw.HeaderStyle
	meter   bool
	errs    []error
}

// methodConf is what options say about one method.
type methodConf struct {
	lim    core.Limiter // nil: the default limiter
	cost   int          // 0: the cost function, or 1
	exempt bool
}

func (o *options) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf("grpcmw: "+format, args...))
}

// method returns the configuration of fullMethod, creating it, or nil after
// recording an error when fullMethod is not of the form
// "/package.Service/Method".
func (o *options) method(opt, fullMethod string) *methodConf {
	if err := checkMethod(fullMethod); err != nil {
		o.fail("%s: %v", opt, err)
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

// checkMethod accepts what grpc passes as info.FullMethod:
// "/package.Service/Method".
func checkMethod(s string) error {
	svc, meth, ok := strings.Cut(strings.TrimPrefix(s, "/"), "/")
	if !strings.HasPrefix(s, "/") || !ok || svc == "" || meth == "" || strings.Contains(meth, "/") {
		return fmt.Errorf("%q is not a full method name; write it as grpc reports it, \"/package.Service/Method\"", s)
	}
	return nil
}

// WithMethodLimiter limits calls to one method with lim instead of the
// default limiter: a login method with a stricter policy, an expensive
// export with its own. fullMethod is written as grpc reports it,
// "/package.Service/Method". The key function and options are shared.
func WithMethodLimiter(fullMethod string, lim core.Limiter) Option {
	return func(o *options) {
		m := o.method("WithMethodLimiter", fullMethod)
		if m == nil {
			return
		}
		if lim == nil {
			o.fail("WithMethodLimiter(%q): nil core.Limiter", fullMethod)
			return
		}
		if m.lim != nil {
			o.fail("WithMethodLimiter(%q): method given two limiters", fullMethod)
			return
		}
		m.lim = lim
	}
}

// WithMethodCost makes every call to one method spend cost units, ahead of
// any WithCost function. cost must be at least 1.
func WithMethodCost(fullMethod string, cost int) Option {
	return func(o *options) {
		m := o.method("WithMethodCost", fullMethod)
		if m == nil {
			return
		}
		if cost < 1 {
			o.fail("WithMethodCost(%q, %d): cost must be at least 1", fullMethod, cost)
			return
		}
		m.cost = cost
	}
}

// WithCost sets how many units a call spends, for methods without a
// WithMethodCost (default: 1, without calling any function).
func WithCost(f CostFunc) Option {
	return func(o *options) {
		if f == nil {
			o.fail("WithCost: nil CostFunc")
			return
		}
		o.cost = f
	}
}

// WithExempt exempts methods from limiting (health checks, reflection):
// their calls are neither counted nor limited and get no rate-limit
// metadata.
func WithExempt(fullMethods ...string) Option {
	return func(o *options) {
		for _, fm := range fullMethods {
			if m := o.method("WithExempt", fm); m != nil {
				m.exempt = true
			}
		}
	}
}

// WithSkip exempts the calls for which f returns true, as WithExempt does
// for whole methods. f runs on every call before the key function, so keep
// it cheap.
func WithSkip(f SkipFunc) Option {
	return func(o *options) {
		if f == nil {
			o.fail("WithSkip: nil SkipFunc")
			return
		}
		o.skip = f
	}
}

// WithFailureMode sets what a call gets when the store fails (default
// FailClosed).
func WithFailureMode(m FailureMode) Option {
	return func(o *options) {
		if m != FailClosed && m != FailOpen {
			o.fail("WithFailureMode: unknown mode %d; use FailClosed or FailOpen", int(m))
			return
		}
		o.failure = m
	}
}

// WithErrorHook sets a function told about every call for which no decision
// could be made (default: none).
func WithErrorHook(h ErrorHook) Option {
	return func(o *options) {
		if h == nil {
			o.fail("WithErrorHook: nil ErrorHook")
			return
		}
		o.hook = h
	}
}

// WithHeaders selects which rate-limit fields go into response header
// metadata (default HeadersBoth). retry-after is sent on every denial
// whatever the style.
func WithHeaders(s HeaderStyle) Option {
	return func(o *options) {
		switch s {
		case HeadersBoth, HeadersLegacy, HeadersIETF, HeadersNone:
			o.headers = s
		default:
			o.fail("WithHeaders: unknown style %d", int(s))
		}
	}
}

// WithMeterMessages makes the stream interceptor charge every message a
// client sends on a limited stream (each RecvMsg that returns a message
// costs 1, against the stream method's limiter and the key found when the
// stream opened), on top of the check when the stream opens. Without it a
// client could hold one admitted stream open and send without limit.
// A message that is refused makes RecvMsg return the same ResourceExhausted
// status a refused call gets (the message is dropped), with
// grpc-retry-pushback-ms in the trailer; header metadata has usually been
// sent by then, so it is not updated.
func WithMeterMessages() Option {
	return func(o *options) { o.meter = true }
}

var errNilOption = errors.New("grpcmw: nil Option")
