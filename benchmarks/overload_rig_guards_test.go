package benchmarks

import (
	"context"
	"net/http"
	"runtime"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/overload"
)

// guard admits a request or sheds it; done reports how an admitted one
// ended (ok: served).
type guard func() (done func(ok bool), admitted bool)

// rigGuard is one protection, ready for each transport: a guard for the
// HTTP handler, interceptors for the gRPC server (each library's own
// where it has one), and the current limit on requests in flight, read
// every 100 ms in the capacity-change run. All share one limiter; a
// server process serves one transport.
type rigGuard struct {
	http   guard
	mw     func(http.Handler) http.Handler // floodgate's: httpmw around the handler, in place of http
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
	limit  func() int // nil: the protection has no limit to read
}

// protection makes a fresh rigGuard per run.
type protection struct {
	name string
	make func() rigGuard
}

var protections = []protection{
	{"none", func() rigGuard { return rigGuard{} }},
	{"static", func() rigGuard {
		n := runtime.GOMAXPROCS(0)
		lim := core.MustNew(core.InFlight(n).WithAlgorithm(core.Concurrency))
		g := floodgateGuard(lim)
		g.limit = func() int { return n }
		return g
	}},
	{"kratos-bbr", func() rigGuard {
		lim := bbr.NewLimiter()
		g := kratosGuard(lim)
		// The bound it applies past its CPU threshold (and for a second
		// after), as its Stat gives it.
		g.limit = func() int { return int(lim.Stat().MaxInFlight) }
		return g
	}},
	{"floodgate-adaptive", func() rigGuard {
		lim, err := overload.NewAdaptive(adaptiveRigConfig)
		if err != nil {
			panic(err)
		}
		g := floodgateGuard(lim)
		g.limit = func() int { return lim.Reading().Limit }
		return g
	}},
	{"floodgate-bbr", func() rigGuard {
		lim, err := overload.NewBBR(overload.BBRConfig{})
		if err != nil {
			panic(err)
		}
		g := floodgateGuard(lim)
		// 0 while no bound applies (below its CPU threshold).
		g.limit = func() int { return lim.Reading().Limit }
		return g
	}},
	{"failsafe-adaptive", func() rigGuard {
		lim := adaptivelimiter.NewBuilder[any]().Build()
		g := failsafeGuard(lim)
		g.limit = lim.Limit
		return g
	}},
}

// adaptiveRigConfig is the rig's overload.Adaptive configuration: its
// defaults.
var adaptiveRigConfig = overload.AdaptiveConfig{}

// floodgateGuard puts lim in front of each transport as a service would, with
// httpmw and grpcmw: every request keyed alike (the guards' limits are
// global anyway), sheds answered 503 and UNAVAILABLE, and each lease told
// how its request ended by the adapter.
func floodgateGuard(lim core.Limiter) rigGuard {
	h, err := httpmw.New(lim, func(*http.Request) (string, error) { return "all", nil })
	if err != nil {
		panic(err)
	}
	l, err := grpcmw.New(lim, grpcmw.KeyByMethod())
	if err != nil {
		panic(err)
	}
	return rigGuard{mw: h.Handler, unary: l.UnaryServerInterceptor(), stream: l.StreamServerInterceptor()}
}

// errKratosLimit is the answer of kratos's ratelimit middleware to a shed
// call (its ErrLimitExceed: code 429, which its gRPC transport sends as
// ResourceExhausted). The rig does not take kratos's framework in for one
// middleware: these interceptors do what that middleware does around
// aegis's limiter.
var errKratosLimit = status.Error(codes.ResourceExhausted, "service unavailable due to rate limit exceeded")

// kratosGuard puts aegis's limiter in front of each transport.
func kratosGuard(lim ratelimit.Limiter) rigGuard {
	return rigGuard{
		http: func() (func(bool), bool) {
			done, err := lim.Allow()
			if err != nil {
				return nil, false
			}
			return func(bool) { done(ratelimit.DoneInfo{}) }, true
		},
		unary:  kratosUnary(lim),
		stream: kratosStream(lim),
	}
}

func kratosUnary(lim ratelimit.Limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		done, err := lim.Allow()
		if err != nil {
			return nil, errKratosLimit
		}
		resp, err := h(ctx, req)
		done(ratelimit.DoneInfo{Err: err})
		return resp, err
	}
}

func kratosStream(lim ratelimit.Limiter) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		done, err := lim.Allow()
		if err != nil {
			return errKratosLimit
		}
		err = h(srv, ss)
		done(ratelimit.DoneInfo{Err: err})
		return err
	}
}

// failsafeGuard puts failsafe-go's adaptive limiter in front of each
// transport: failsafegrpc's interceptor for unary calls, and for streams,
// which failsafegrpc has none for, failsafeStream.
func failsafeGuard(lim adaptivelimiter.AdaptiveLimiter[any]) rigGuard {
	return rigGuard{
		http: func() (func(bool), bool) {
			p, ok := lim.TryAcquirePermit()
			if !ok {
				return nil, false
			}
			return func(served bool) { failsafeEnd(p, served) }, true
		},
		unary:  failsafegrpc.NewUnaryServerInterceptor[any](lim),
		stream: failsafeStream(lim),
	}
}

// failsafeStream does for a stream what failsafegrpc's unary interceptor
// does for a call, with the permit held until the stream ends: its
// ErrExceeded as the error (which gRPC sends as Unknown, as the unary
// interceptor's), a dropped permit when the call was cancelled.
func failsafeStream(lim adaptivelimiter.AdaptiveLimiter[any]) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		p, ok := lim.TryAcquirePermit()
		if !ok {
			return adaptivelimiter.ErrExceeded
		}
		err := h(srv, ss)
		failsafeEnd(p, ss.Context().Err() == nil)
		return err
	}
}

func failsafeEnd(p adaptivelimiter.Permit, served bool) {
	if served {
		p.Record()
	} else {
		p.Drop()
	}
}
