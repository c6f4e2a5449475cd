package grpcmw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
)

// Status messages. They are fixed: never an error's text, which can hold
// internal details (addresses, store names, the client's own metadata).
const (
	// MessageDenied is the message of a refused call's ResourceExhausted
	// status.
	MessageDenied = "rate limit exceeded"
	// MessageUnavailable is the message of the ResourceExhausted status of a
	// call refused because the limiter's store failed (FailClosed).
	MessageUnavailable = "rate limiter unavailable, retry later"
	// MessageKey is the message of the Internal status of a call whose key
	// function failed.
	MessageKey = "rate limiter could not identify the caller"
	// MessageCost is the message of the Internal status of a call whose cost
	// function failed.
	MessageCost = "rate limiter could not price the call"
	// MessageInvalidCost is the message of the InvalidArgument status of a
	// call whose cost the limit can never admit.
	MessageInvalidCost = "the call's rate-limit cost can never be admitted"
	// MessageInternal is the message of the Internal status of a call whose
	// core.Limiter failed in a way it does not classify (neither
	// core.ErrStore nor core.ErrInvalidCost).
	MessageInternal = "rate limiter failed"
)

// ErrorInfo identification of refusals.
const (
	// Domain is the ErrorInfo domain of every refusal.
	Domain = "floodgate"
	// ReasonRateLimited is the ErrorInfo reason of a call refused by a limit.
	// It tells a rate-limit refusal apart from the other causes of
	// ResourceExhausted, such as a message over the size limit.
	ReasonRateLimited = "RATE_LIMITED"
	// ReasonUnavailable is the ErrorInfo reason of a call refused because
	// the limiter's store failed (FailClosed).
	ReasonUnavailable = "RATE_LIMITER_UNAVAILABLE"
)

// PushbackKey is the trailer metadata key of a refusal's retry delay in
// whole milliseconds (gRFC A6): grpc-go's own retry policy and other gRPC
// clients read it.
const PushbackKey = "grpc-retry-pushback-ms"

// The answers to calls for which no decision could be made are the same
// every time, so they are made once.
var (
	statusKey         = status.Error(codes.Internal, MessageKey)
	statusCost        = status.Error(codes.Internal, MessageCost)
	statusInvalidCost = status.Error(codes.InvalidArgument, MessageInvalidCost)
	statusInternal    = status.Error(codes.Internal, MessageInternal)
	statusUnavailable = status.ErrorProto(&spb.Status{
		Code:    int32(codes.ResourceExhausted),
		Message: MessageUnavailable,
		Details: []*anypb.Any{
			mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}),
			mustAny(&errdetails.ErrorInfo{Reason: ReasonUnavailable, Domain: Domain}),
		},
	})
	// A store failure sends what httpmw sends: Retry-After: 1, no rate-limit
	// headers (no quota was read).
	mdUnavailable        = metadata.MD{"retry-after": {"1"}}
	mdUnavailableTrailer = metadata.MD{PushbackKey: {"1000"}}
)

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil { // cannot happen: the messages are well-formed
		panic(err)
	}
	return a
}

// KeyFunc derives the rate-limit key of a call from its context (peer,
// incoming metadata) and full method name ("/package.Service/Method"). It
// never returns an empty key with a nil error: a call that yields no key is
// an error, answered Internal, never "unlimited".
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// Limiter puts a core.Limiter in front of gRPC methods: it extracts a key
// and a cost from each call, asks the core.Limiter (the default one, or the
// method's own), sets the rate-limit metadata and refuses calls with
// ResourceExhausted and status details.
//
// Limiter.UnaryServerInterceptor and Limiter.StreamServerInterceptor are
// the interceptors; Limiter.Limit makes a Limiter a go-grpc-middleware v2
// ratelimit.Limiter. A Limiter is safe for concurrent use. Make it with New.
type Limiter struct {
	key     KeyFunc
	def     *route
	methods map[string]methodRoute
	o       options
}

// route is one core.Limiter and what answers its decisions.
type route struct {
	lim core.Limiter
	// hdr formats header values: httpmw's formatting, so that gRPC
	// metadata and HTTP headers carry the same values for a Decision.
	hdr *httpmw.Limiter
	// last is the policy of the last denial, with its details ready.
	last atomic.Pointer[policyInfo]
}

type methodRoute struct {
	r      *route
	cost   int
	exempt bool
}

var (
	_ ratelimit.Limiter = (*Limiter)(nil)

	errUnusedKey = errors.New("grpcmw: internal: http key function called")
	unusedKey    = func(*http.Request) (string, error) { return "", errUnusedKey }
)

// New returns a Limiter that limits calls by key through lim, or through a
// method's own limiter (WithMethodLimiter). key is required, so every call
// site says what it limits by: KeyByPeerIP, KeyByMetadata, KeyByMethod,
// Constant and JoinKeys are the usual ones. Options default to: cost 1 per
// call, every method limited, both header styles, FailClosed, no error
// hook, streams checked only when they open.
func New(lim core.Limiter, key KeyFunc, opts ...Option) (*Limiter, error) {
	if lim == nil {
		return nil, errors.New("grpcmw: nil core.Limiter; make one with core.New")
	}
	if key == nil {
		return nil, errors.New("grpcmw: nil KeyFunc; pass one such as grpcmw.KeyByPeerIP()")
	}
	l := &Limiter{key: key}
	for _, opt := range opts {
		if opt == nil {
			return nil, errNilOption
		}
		opt(&l.o)
	}
	if err := errors.Join(l.o.errs...); err != nil {
		return nil, err
	}
	l.o.errs = nil
	var err error
	if l.def, err = l.newRoute(lim); err != nil {
		return nil, err
	}
	if len(l.o.methods) > 0 {
		l.methods = make(map[string]methodRoute, len(l.o.methods))
		for name, m := range l.o.methods {
			mr := methodRoute{r: l.def, cost: m.cost, exempt: m.exempt}
			if m.lim != nil {
				if mr.r, err = l.newRoute(m.lim); err != nil {
					return nil, err
				}
			}
			l.methods[name] = mr
		}
	}
	return l, nil
}

func (l *Limiter) newRoute(lim core.Limiter) (*route, error) {
	h, err := httpmw.New(lim, unusedKey, httpmw.WithHeaders(l.o.headers))
	if err != nil {
		return nil, fmt.Errorf("grpcmw: %w", err)
	}
	return &route{lim: lim, hdr: h}, nil
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

// UnaryServerInterceptor returns a unary server interceptor limiting calls
// by key through lim; see New.
//
//	limit, err := grpcmw.UnaryServerInterceptor(lim, grpcmw.KeyByPeerIP())
//	...
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(limit))
func UnaryServerInterceptor(lim core.Limiter, key KeyFunc, opts ...Option) (grpc.UnaryServerInterceptor, error) {
	l, err := New(lim, key, opts...)
	if err != nil {
		return nil, err
	}
	return l.UnaryServerInterceptor(), nil
}

// StreamServerInterceptor returns a stream server interceptor limiting the
// opening of streams (and with WithMeterMessages their messages) by key
// through lim; see New. To share one configuration between unary and
// stream methods, make a Limiter with New and use its methods.
func StreamServerInterceptor(lim core.Limiter, key KeyFunc, opts ...Option) (grpc.StreamServerInterceptor, error) {
	l, err := New(lim, key, opts...)
	if err != nil {
		return nil, err
	}
	return l.StreamServerInterceptor(), nil
}

// UnaryServerInterceptor returns the unary server interceptor. A call that
// is admitted gets the rate-limit fields in its response header metadata
// and runs the handler; a refused call gets them too, with retry-after, and
// the ResourceExhausted status described in the package documentation.
func (l *Limiter) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if _, err := l.admit(ctx, info.FullMethod, sink{ts: grpc.ServerTransportStreamFromContext(ctx)}); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor returns the stream server interceptor. A stream
// is checked when it opens, as a unary call is; with WithMeterMessages
// every message the client sends on it is charged too.
func (l *Limiter) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		c, err := l.admit(ss.Context(), info.FullMethod, sink{ss: ss})
		if err != nil {
			return err
		}
		if l.o.meter && c.r != nil {
			ss = &meteredStream{ServerStream: ss, l: l, method: info.FullMethod, c: call{r: c.r, key: c.key, cost: 1}}
		}
		return handler(srv, ss)
	}
}

// Limit makes a Limiter a go-grpc-middleware v2 ratelimit.Limiter, for
// interceptor chains that already use that package:
//
//	ratelimit.UnaryServerInterceptor(grpcmw.MustNew(lim, grpcmw.KeyByPeerIP()))
//
// It decides the call whose server context ctx is (the method comes from
// grpc.Method), sets the same response metadata as the interceptors, and
// returns nil to admit or the status error this package's interceptors
// would return. Their interceptor, however, turns any error into a new
// ResourceExhausted status whose message is the method and the error's
// text: RetryInfo, QuotaFailure and ErrorInfo are lost, and key or store
// failures become ResourceExhausted too. Prefer this package's interceptors
// where you can.
func (l *Limiter) Limit(ctx context.Context) error {
	method, _ := grpc.Method(ctx)
	_, err := l.admit(ctx, method, sink{ts: grpc.ServerTransportStreamFromContext(ctx)})
	return err
}

// sink is where a call's response metadata goes: its grpc.ServerStream,
// or for unary calls the grpc.ServerTransportStream in its context. Outside
// a gRPC server (a handler called directly) both are nil and metadata is
// dropped. Errors are ignored: setting headers fails only once they are
// sent, which a call that is just starting has not done; a metered message
// sets no headers.
type sink struct {
	ss grpc.ServerStream
	ts grpc.ServerTransportStream
}

func (k sink) setHeader(md metadata.MD) {
	switch {
	case len(md) == 0:
	case k.ss != nil:
		_ = k.ss.SetHeader(md)
	case k.ts != nil:
		_ = k.ts.SetHeader(md)
	}
}

func (k sink) setTrailer(md metadata.MD) {
	switch {
	case k.ss != nil:
		k.ss.SetTrailer(md)
	case k.ts != nil:
		_ = k.ts.SetTrailer(md)
	}
}

// call is one check: the route that decided it, what was asked, and the
// answer.
type call struct {
	r    *route // nil when the call was exempt
	key  string
	cost int
	d    core.Decision
}

// check runs the exemptions, key and cost functions and asks the route's
// core.Limiter. A denial is a call with d.Allowed false and a nil error.
func (l *Limiter) check(ctx context.Context, fullMethod string) (call, error) {
	r, cost := l.def, 0
	if l.methods != nil {
		if m, ok := l.methods[fullMethod]; ok {
			if m.exempt {
				return call{}, nil
			}
			r, cost = m.r, m.cost
		}
	}
	if l.o.skip != nil && l.o.skip(ctx, fullMethod) {
		return call{}, nil
	}
	key, err := l.key(ctx, fullMethod)
	if err != nil {
		return call{}, fmt.Errorf("%w: %w", core.ErrKey, err)
	}
	if key == "" {
		return call{}, core.ErrEmptyKey
	}
	if cost == 0 {
		cost = 1
		if l.o.cost != nil {
			if cost, err = l.o.cost(ctx, fullMethod); err != nil {
				return call{}, fmt.Errorf("%w: %w", core.ErrCost, err)
			}
		}
	}
	c := call{r: r, key: key, cost: cost}
	c.d, err = r.lim.Allow(ctx, key, cost)
	return c, err
}

// admit checks one call and answers it: a nil error lets it proceed. The
// returned call has a nil route when the call was exempt.
func (l *Limiter) admit(ctx context.Context, fullMethod string, s sink) (call, error) {
	c, err := l.check(ctx, fullMethod)
	if err != nil {
		return c, l.answerError(ctx, fullMethod, s, err)
	}
	if c.r == nil {
		return c, nil
	}
	return c, l.answer(ctx, fullMethod, s, c, true)
}

// answer sets the metadata for a decision and returns the call's status:
// nil when admitted (after its shaping delay).
func (l *Limiter) answer(ctx context.Context, fullMethod string, s sink, c call, headers bool) error {
	if !c.d.Allowed {
		if headers {
			s.setHeader(c.r.headerMD(c.d))
		}
		s.setTrailer(metadata.MD{PushbackKey: {pushbackMillis(c.d.RetryAfter)}})
		return c.r.denied(c.d)
	}
	if c.d.Delay > 0 {
		err := c.r.hdr.Wait(ctx, httpmw.Result{Decision: c.d, Key: c.key, Cost: c.cost})
		if err != nil {
			return l.answerError(ctx, fullMethod, s, fmt.Errorf("%w: %w", core.ErrWaitCanceled, err))
		}
	}
	if headers {
		s.setHeader(c.r.headerMD(c.d))
	}
	return nil
}

// answerError answers a call for which no decision could be made. Besides
// the FailClosed answer explained there, the codes are:
//
//   - a key function failure: Internal, as for HTTP 500. It is a bug or a
//     misconfiguration, not the client's doing, and its text is not shown.
//   - an invalid cost (core.ErrInvalidCost): InvalidArgument, as for HTTP
//     400. The cost comes from the call, and a cost the limit can never
//     admit never succeeds however long the client waits: ResourceExhausted
//     would promise a retry that cannot work, Internal or Unavailable would
//     invite retries. InvalidArgument says "change the call" and is not
//     retried by clients.
//   - a cost function failure: Internal.
//   - a shaped call whose context ended: its context's status (Canceled or
//     DeadlineExceeded); its units were refunded.
func (l *Limiter) answerError(ctx context.Context, fullMethod string, s sink, err error) error {
	if l.o.hook != nil {
		l.o.hook(ctx, fullMethod, err)
	}
	switch {
	case errors.Is(err, core.ErrKey):
		return statusKey
	case errors.Is(err, core.ErrInvalidCost):
		return statusInvalidCost
	case errors.Is(err, core.ErrCost):
		return statusCost
	case errors.Is(err, core.ErrWaitCanceled):
		return status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, core.ErrStore):
		if l.o.failure == FailOpen {
			return nil
		}
		s.setHeader(mdUnavailable.Copy())
		s.setTrailer(mdUnavailableTrailer.Copy())
		return statusUnavailable
	}
	return statusInternal
}

// headerMD returns the response header metadata for d: the values httpmw
// writes for the same Decision, under lower-case keys.
func (r *route) headerMD(d core.Decision) metadata.MD {
	h := make(http.Header, 8)
	r.hdr.WriteHeaders(h, d)
	if len(h) == 0 {
		return nil
	}
	md := make(metadata.MD, len(h))
	for k, v := range h {
		md[lowerKey(k)] = v
	}
	return md
}

// lowerKey turns httpmw's canonical header keys into metadata keys, which
// grpc requires in lower case, without allocating for the known ones.
func lowerKey(k string) string {
	switch k {
	case "X-Ratelimit-Limit":
		return "x-ratelimit-limit"
	case "X-Ratelimit-Remaining":
		return "x-ratelimit-remaining"
	case "X-Ratelimit-Reset":
		return "x-ratelimit-reset"
	case "Ratelimit-Policy":
		return "ratelimit-policy"
	case "Ratelimit":
		return "ratelimit"
	case "Retry-After":
		return "retry-after"
	}
	return strings.ToLower(k)
}

// pushbackMillis is grpc-retry-pushback-ms for a denial: RetryAfter in
// whole milliseconds, rounded up (a client waiting that long is never
// early), at least 1.
func pushbackMillis(d time.Duration) string {
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return strconv.FormatInt(max(ms, 1), 10)
}

// policyInfo holds the parts of a denial's status that depend only on the
// deciding Limit, made once per policy.
type policyInfo struct {
	limit    core.Limit
	name     string
	limitVal string
	quota    *anypb.Any // QuotaFailure
	info0    *anypb.Any // ErrorInfo with remaining 0, the usual case
}

func newPolicyInfo(l core.Limit) *policyInfo {
	name := l.Name
	if name == "" {
		name = "default"
	}
	p := &policyInfo{limit: l, name: name, limitVal: strconv.Itoa(max(l.Events, 0))}
	desc := p.limitVal + " per " + l.Period.String()
	if l.Burst != 0 && l.Burst != l.Events {
		desc += ", burst " + strconv.Itoa(l.Burst)
	}
	p.quota = mustAny(&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     name,
		Description: desc,
	}}})
	p.info0 = p.errorInfo(0)
	return p
}

// errorInfo is the ErrorInfo of a denial: the reason, and in its metadata
// the policy, limit and remaining quota, with the values of the
// x-ratelimit-limit and x-ratelimit-remaining headers.
func (p *policyInfo) errorInfo(remaining int) *anypb.Any {
	return mustAny(&errdetails.ErrorInfo{
		Reason: ReasonRateLimited,
		Domain: Domain,
		Metadata: map[string]string{
			"policy":    p.name,
			"limit":     p.limitVal,
			"remaining": strconv.Itoa(max(remaining, 0)),
		},
	})
}

// denied returns the status error of a refusal by d: ResourceExhausted,
// MessageDenied, and RetryInfo, QuotaFailure and ErrorInfo details.
func (r *route) denied(d core.Decision) error {
	p := r.last.Load()
	if p == nil || p.limit != d.Limit {
		p = newPolicyInfo(d.Limit)
		r.last.Store(p)
	}
	info := p.info0
	if d.Remaining > 0 {
		info = p.errorInfo(d.Remaining)
	}
	// RetryInfo carries the exact RetryAfter, which a core.Limiter keeps
	// above 0 on every denial; a misbehaving one still never says "now".
	retry := max(d.RetryAfter, time.Nanosecond)
	return status.ErrorProto(&spb.Status{
		Code:    int32(codes.ResourceExhausted),
		Message: MessageDenied,
		Details: []*anypb.Any{
			mustAny(&errdetails.RetryInfo{RetryDelay: durationpb.New(retry)}),
			p.quota,
			info,
		},
	})
}

// meteredStream charges every message the client sends on a stream.
type meteredStream struct {
	grpc.ServerStream
	l      *Limiter
	method string
	c      call // route and key of the stream, cost 1
}

// RecvMsg receives a message and charges it; a refused message is dropped
// and RecvMsg returns the refusal's status.
func (s *meteredStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	ctx := s.Context()
	c := s.c
	var err error
	c.d, err = c.r.lim.Allow(ctx, c.key, c.cost)
	if err != nil {
		return s.l.answerError(ctx, s.method, sink{ss: s.ServerStream}, err)
	}
	return s.l.answer(ctx, s.method, sink{ss: s.ServerStream}, c, false)
}
