package grpcmw

import (
	"context"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// KeyFunc derives the rate-limit key of a call from its context (peer,
// incoming metadata) and full method name ("/package.Service/Method"). It
// never returns an empty key with a nil error: a call that yields no key is
// an error, never "unlimited" (see the package documentation for the
// codes).
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// Limiter puts a core.Limiter in front of gRPC methods: it extracts a key
// and a cost from each call, asks the core.Limiter (the one given to New,
// or the one WithLimiterFunc chooses), sets the rate-limit metadata and
// refuses calls with ResourceExhausted and status details.
//
// Limiter.UnaryServerInterceptor and Limiter.StreamServerInterceptor are
// the interceptors; Limiter.Limit makes a Limiter a go-grpc-middleware v2
// ratelimit.Limiter. A Limiter is safe for concurrent use. Make it with New.
type Limiter struct {
	lim      core.Limiter
	p        *pipeline.Pipeline[call]
	o        options
	policies *fields.Cache[policy]
	// list is the limiter's RateLimit-Policy list when it is a stack
	// (core.PolicyLister); lists holds WithLimiterFunc's limiters'.
	list  string
	lists fields.Lists
}

// call is what the pipeline sees of a gRPC call.
type call struct {
	ctx    context.Context
	method string
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// New returns a Limiter that limits calls by key through lim. key is
// required, so every call site says what it limits by: KeyByPeerIP,
// KeyByMetadata, KeyByMethod, Constant and JoinKeys are the usual ones.
// lim is required too, unless WithLimiterFunc chooses the limiter per
// call: lim must then be nil. Options default to: cost 1 per call, every
// method limited but health and reflection (SkipInfrastructure;
// WithSkip(nil) limits those too), rate-limit metadata on refusals and
// near the limit (see WithHeaders), core.FailClosed, no observer, streams
// checked only when they open.
func New(lim core.Limiter, key KeyFunc, opts ...Option) (*Limiter, error) {
	l := &Limiter{lim: lim}
	l.o.Prefix = "grpcmw: "
	l.o.skip = SkipInfrastructure
	if err := option.Apply(&l.o, &l.o.Errors, opts); err != nil {
		return nil, err
	}
	if err := l.o.Validate(lim, key != nil, "grpcmw.MustKeyByPeerIP()"); err != nil {
		return nil, err
	}
	cfg := l.o.Pipeline
	cfg.Skip = nil // the interceptors skip first (options.skip)
	cfg.Transport = "grpc"
	cfg.Key = func(c call) (string, error) { return key(c.ctx, c.method) }
	l.p = pipeline.New(cfg)
	if lim != nil {
		l.list = l.lists.Of(lim)
	}
	l.policies = fields.NewCache(newPolicy)
	return l, nil
}

// MustNew is like New but panics on error. It is meant for package-level
// variables and for set-up code whose arguments are constants.
func MustNew(lim core.Limiter, key KeyFunc, opts ...Option) *Limiter {
	l, err := New(lim, key, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

// UnaryServerInterceptor returns the unary server interceptor. A call that
// is admitted gets the rate-limit fields in its response header metadata
// and runs the handler; a refused call gets them too, with retry-after, and
// the ResourceExhausted status described in the package documentation.
func (l *Limiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if l.o.skip(ctx, info.FullMethod) {
			return handler(ctx, req)
		}
		var res pipeline.Result
		if err := l.admit(ctx, info.FullMethod, sink{ts: grpc.ServerTransportStreamFromContext(ctx)}, &res); err != nil {
			return nil, err
		}
		if !res.Decision.Lease.IsZero() {
			return l.leased(ctx, req, handler, &res)
		}
		if l.o.RefundInner {
			ctx = pipeline.Attach(ctx, l.lim, &res)
		}
		return handler(ctx, req)
	}
}

// leased runs an admitted unary call that holds a lease, and ends the
// lease however the handler ends, told how (ending): apart from the
// interceptor, whose common path then has no defer.
func (l *Limiter) leased(ctx context.Context, req any, handler grpc.UnaryHandler, res *pipeline.Result) (resp any, err error) {
	lease := res.Decision.Lease
	defer func(ctx context.Context) { pipeline.EndAs(ctx, lease, ending(ctx, err)) }(ctx)
	if l.o.RefundInner {
		ctx = pipeline.Attach(ctx, l.lim, res)
	}
	return handler(ctx, req)
}

// StreamServerInterceptor returns the stream server interceptor. A stream
// is checked when it opens, as a unary call is; with WithMeterMessages
// every message the client sends on it is charged too.
func (l *Limiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx := ss.Context()
		if l.o.skip(ctx, info.FullMethod) {
			return handler(srv, ss)
		}
		var res pipeline.Result
		if err := l.admit(ctx, info.FullMethod, sink{ss: ss}, &res); err != nil {
			return err
		}
		// The stream ends when its handler returns (or panics), told how.
		if lease := res.Decision.Lease; !lease.IsZero() {
			defer func() { pipeline.EndAs(ctx, lease, ending(ctx, err)) }()
		}
		if !l.o.RefundInner && (!l.o.meter || res.Skipped) {
			return handler(srv, ss)
		}
		lim := l.lim
		if res.Limiter != nil {
			lim = res.Limiter
		}
		if l.o.RefundInner {
			if actx := pipeline.Attach(ctx, lim, &res); actx != ctx {
				ss = &ctxStream{ss, actx}
			}
		}
		if !l.o.meter || res.Skipped {
			return handler(srv, ss)
		}
		ms := &meteredStream{ServerStream: ss, l: l, lim: lim, key: res.Key}
		defer ms.finish()
		return handler(srv, ms)
	}
}

// Limit makes a Limiter a go-grpc-middleware v2 ratelimit.Limiter, for
// interceptor chains that already use that package:
//
//	ratelimit.UnaryServerInterceptor(grpcmw.MustNew(lim, grpcmw.MustKeyByPeerIP()))
//
// It decides the call whose server context ctx is (the method comes from
// grpc.Method), sets the same response metadata as the interceptors, and
// returns nil to admit or the status error this package's interceptors
// would return. Their interceptor, however, turns any error into a new
// ResourceExhausted status whose message is the method and the error's
// text: RetryInfo, QuotaFailure and ErrorInfo are lost, and key or store
// failures become ResourceExhausted too. Prefer this package's interceptors
// where you can.
//
// A concurrency slot it takes (Decision.Lease) is given back when the
// call's context ends, which grpc does when the call ends; the charge is
// not recorded for interceptors inside (WithRefundOnInnerRefusal needs this
// package's interceptors).
func (l *Limiter) Limit(ctx context.Context) error {
	method, _ := grpc.Method(ctx)
	if l.o.skip(ctx, method) {
		return nil
	}
	var res pipeline.Result
	if err := l.admit(ctx, method, sink{ts: grpc.ServerTransportStreamFromContext(ctx)}, &res); err != nil {
		return err
	}
	if lease := res.Decision.Lease; !lease.IsZero() {
		context.AfterFunc(ctx, func() { pipeline.End(ctx, lease) })
	}
	return nil
}

// ctxStream is a server stream whose context records this Limiter's charge
// (WithRefundOnInnerRefusal).
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// admit runs the pipeline for one call, sets *res and answers it: a nil
// error lets it proceed.
func (l *Limiter) admit(ctx context.Context, fullMethod string, s sink, res *pipeline.Result) error {
	l.p.Run(ctx, call{ctx, fullMethod}, l.lim, 0, res)
	list := l.list
	if res.Limiter != nil {
		list = l.lists.Of(res.Limiter)
	}
	return l.answer(ctx, s, res, list, true)
}

// answer sets the metadata for a result and returns the call's status:
// nil when it may proceed. headers is false for a metered message, whose
// header metadata has gone already.
func (l *Limiter) answer(ctx context.Context, s sink, res *pipeline.Result, list string, headers bool) error {
	switch {
	case res.Skipped:
		return nil
	case res.Shadow:
		if headers && l.o.HeadersSet && res.Err == nil {
			s.setHeader(l.headerMD(res.ShadowDecision(), list))
		}
		return nil
	case res.Err != nil:
		if res.FailedOpen {
			return nil
		}
		return l.errorStatus(ctx, s, res.Err)
	}
	if !headers { // a metered message
		if !res.Decision.Allowed {
			return l.denied(res.Decision)
		}
		return nil
	}
	s.setHeader(l.headerMD(res.Decision, list))
	if !res.Decision.Allowed {
		s.setTrailer(metadata.MD{PushbackKey: {pushbackMillis(res.Decision.RetryAfter)}})
		return l.denied(res.Decision)
	}
	return nil
}
