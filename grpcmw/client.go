package grpcmw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// ClientOption configures the client interceptors.
type ClientOption func(*clientOptions)

type clientOptions struct {
	attempts int
	base     time.Duration
	cap      time.Duration
	maxWait  time.Duration
	rand     func() float64
	sleep    func(context.Context, time.Duration) error
	errs     []error
}

// Client defaults.
const (
	// DefaultMaxAttempts is how many times a call is tried in all, unless
	// WithMaxAttempts says otherwise.
	DefaultMaxAttempts = 3
	// DefaultBackoffBase and DefaultBackoffMax bound the jitter added to a
	// server's retry delay (see WithBackoff).
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	// DefaultMaxWait is the longest retry delay a server may ask for before
	// the client gives up instead (see WithMaxWait).
	DefaultMaxWait = time.Minute
)

// WithMaxAttempts sets how many times a call is tried in all, the first
// time included (default DefaultMaxAttempts). 1 turns retries off.
func WithMaxAttempts(n int) ClientOption {
	return func(o *clientOptions) {
		if n < 1 {
			o.errs = append(o.errs, fmt.Errorf("grpcmw: WithMaxAttempts(%d): want at least 1", n))
			return
		}
		o.attempts = n
	}
}

// WithBackoff sets the capped exponential backoff whose full jitter is added
// to the server's retry delay: before retry n (1, 2, …) the client waits the
// server's delay plus a uniformly random duration in [0, min(max,
// base·2^(n-1))). The server's delay says when a retry can succeed; the
// jitter spreads the clients it refused at one instant so that they do not
// all come back at the same one. Defaults: DefaultBackoffBase,
// DefaultBackoffMax.
func WithBackoff(base, max time.Duration) ClientOption {
	return func(o *clientOptions) {
		if base < 0 || max < base {
			o.errs = append(o.errs, fmt.Errorf("grpcmw: WithBackoff(%v, %v): want 0 <= base <= max", base, max))
			return
		}
		o.base, o.cap = base, max
	}
}

// WithMaxWait sets the longest retry delay a server may ask for (default
// DefaultMaxWait): a refusal asking for longer is returned at once rather
// than waited out. The call's deadline bounds every wait too.
func WithMaxWait(d time.Duration) ClientOption {
	return func(o *clientOptions) {
		if d <= 0 {
			o.errs = append(o.errs, fmt.Errorf("grpcmw: WithMaxWait(%v): want > 0", d))
			return
		}
		o.maxWait = d
	}
}

// WithRand sets the source of jitter: a function returning a uniformly
// random number in [0, 1) (default math/rand/v2's Float64). Tests pass a
// fixed one.
func WithRand(f func() float64) ClientOption {
	return func(o *clientOptions) {
		if f == nil {
			o.errs = append(o.errs, errors.New("grpcmw: WithRand: nil function"))
			return
		}
		o.rand = f
	}
}

// WithSleep sets how the client waits before a retry (default: a timer that
// stops early, returning ctx's error, when ctx ends). Tests pass one that
// advances a fake clock.
func WithSleep(f func(ctx context.Context, d time.Duration) error) ClientOption {
	return func(o *clientOptions) {
		if f == nil {
			o.errs = append(o.errs, errors.New("grpcmw: WithSleep: nil function"))
			return
		}
		o.sleep = f
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newClientOptions(opts []ClientOption) (*clientOptions, error) {
	o := &clientOptions{
		attempts: DefaultMaxAttempts,
		base:     DefaultBackoffBase,
		cap:      DefaultBackoffMax,
		maxWait:  DefaultMaxWait,
		rand:     rand.Float64,
		sleep:    sleepCtx,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("grpcmw: nil ClientOption")
		}
		opt(o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	return o, nil
}

// RetryDelay reports the retry delay a refusal asks for: the RetryInfo
// detail of a ResourceExhausted status error. ok is false for any other
// error, or when the status carries no usable RetryInfo.
func RetryDelay(err error) (d time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if err == nil || !isStatus || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, det := range st.Details() {
		if ri, isRI := det.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay() != nil {
			if err := ri.GetRetryDelay().CheckValid(); err != nil {
				return 0, false
			}
			if d = ri.GetRetryDelay().AsDuration(); d < 0 {
				return 0, false
			}
			return d, true
		}
	}
	return 0, false
}

// retryHint is the delay a refused call asks for: RetryInfo, else the
// trailer's grpc-retry-pushback-ms. A negative or malformed pushback means
// "do not retry", as gRFC A6 defines it.
func retryHint(err error, trailer metadata.MD) (time.Duration, bool) {
	if d, ok := RetryDelay(err); ok {
		return d, true
	}
	if status.Code(err) != codes.ResourceExhausted {
		return 0, false
	}
	vs := trailer.Get(PushbackKey)
	if len(vs) != 1 {
		return 0, false
	}
	ms, perr := strconv.ParseInt(vs[0], 10, 64)
	if perr != nil || ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// wait returns how long to wait before retry n (1, 2, …) of a call refused
// with the given hint, or false to give up: the hint is longer than the
// maximum wait, or reaches the deadline.
func (o *clientOptions) wait(ctx context.Context, n int, hint time.Duration) (time.Duration, bool) {
	if hint > o.maxWait {
		return 0, false
	}
	backoff := o.cap
	if n-1 < 62 && o.base <= o.cap>>(n-1) {
		backoff = o.base << (n - 1)
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if hint >= left {
			return 0, false
		}
		// The jitter never takes the wait past the deadline.
		backoff = min(backoff, left-hint)
	}
	return addSat(hint, o.jitter(backoff)), true
}

// jitter draws a duration in [0, backoff]. The product is checked in
// floating point before it is converted, so neither rounding near the
// largest Duration nor a WithRand source outside [0, 1) can turn it into
// an out-of-range conversion or a negative wait.
func (o *clientOptions) jitter(backoff time.Duration) time.Duration {
	j := o.rand() * float64(backoff)
	switch {
	case !(j > 0): // also NaN
		return 0
	case j >= float64(backoff):
		return backoff
	}
	return time.Duration(j)
}

// addSat adds two non-negative durations, saturating at the largest
// Duration. With a very large WithMaxWait a server's delay may be close to
// it, and a plain sum would wrap negative: a timer that fires at once, a
// retry with no wait at all.
func addSat(a, b time.Duration) time.Duration {
	const maxDuration = time.Duration(1<<63 - 1)
	if b > maxDuration-a {
		return maxDuration
	}
	return a + b
}

// UnaryClientInterceptor returns a unary client interceptor that retries a
// call refused with ResourceExhausted and a retry delay (a RetryInfo
// detail, or grpc-retry-pushback-ms in the trailer): it waits the delay
// plus jitter (see WithBackoff) and tries again, up to WithMaxAttempts
// times in all. It gives up, returning the last refusal, when the next wait
// would reach the call's deadline, when the delay is longer than
// WithMaxWait, or when the call's context ends while it waits.
// ResourceExhausted without a retry delay (such as a message over the size
// limit) and every other error are returned at once.
//
// It returns an error for invalid options.
func UnaryClientInterceptor(opts ...ClientOption) (grpc.UnaryClientInterceptor, error) {
	o, err := newClientOptions(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		var trailer metadata.MD
		callOpts = append(callOpts[:len(callOpts):len(callOpts)], grpc.Trailer(&trailer))
		for n := 1; ; n++ {
			trailer = nil
			err := invoker(ctx, method, req, reply, cc, callOpts...)
			if err == nil || n >= o.attempts {
				return err
			}
			hint, ok := retryHint(err, trailer)
			if !ok {
				return err
			}
			d, ok := o.wait(ctx, n, hint)
			if !ok || o.sleep(ctx, d) != nil {
				return err
			}
		}
	}, nil
}

// StreamClientInterceptor returns a stream client interceptor that retries
// a stream refused when it opens, as UnaryClientInterceptor retries a call.
// The refusal shows when the stream is read (RecvMsg), so that is where
// the retry happens, transparently, while the client has received nothing
// on the stream.
//
// A server-streaming call's one request is kept (a copy, for protobuf
// messages) and sent again on the new stream. Client-streaming and
// bidirectional streams are retried only while the client has sent
// nothing: messages already handed to a stream are not replayed. Header and
// Trailer describe the latest attempt.
//
// It returns an error for invalid options.
func StreamClientInterceptor(opts ...ClientOption) (grpc.StreamClientInterceptor, error) {
	o, err := newClientOptions(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil || o.attempts == 1 {
			return cs, err
		}
		return &retryStream{
			o: o, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, callOpts: callOpts,
			cur: cs, retriable: true,
		}, nil
	}, nil
}

// retryStream is a client stream that opens again when the server refuses
// it before sending anything.
type retryStream struct {
	o        *clientOptions
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	callOpts []grpc.CallOption

	mu        sync.Mutex // guards the fields below
	cur       grpc.ClientStream
	attempt   int  // retries made so far
	retriable bool // nothing received, nothing unreplayable sent
	req       any  // a server-streaming call's request, to send again
	closed    bool // CloseSend was called, to call again
}

func (s *retryStream) stream() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *retryStream) Header() (metadata.MD, error) { return s.stream().Header() }
func (s *retryStream) Trailer() metadata.MD         { return s.stream().Trailer() }
func (s *retryStream) Context() context.Context     { return s.stream().Context() }

// CloseSend and SendMsg update the replay state under the lock but send
// without it, so that a send blocked on flow control never blocks a reader.
// Once a stream is not retriable its cur never changes again; while it is,
// retry re-checks the state under the lock before it replaces cur.

func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	return cur.CloseSend()
}

func (s *retryStream) SendMsg(m any) error {
	s.mu.Lock()
	if s.retriable {
		pm, ok := m.(proto.Message)
		if !s.desc.ClientStreams && s.req == nil && ok {
			s.req = proto.Clone(pm)
		} else {
			s.retriable, s.req = false, nil
		}
	}
	cur := s.cur
	s.mu.Unlock()
	return cur.SendMsg(m)
}

func (s *retryStream) RecvMsg(m any) error {
	for {
		cur := s.stream()
		err := cur.RecvMsg(m)
		if err == nil {
			s.mu.Lock()
			s.retriable, s.req = false, nil
			s.mu.Unlock()
			return nil
		}
		if err == io.EOF || !s.retry(cur, err) {
			return err
		}
	}
}

// retry waits and opens the stream again after cur ended with err, and
// reports whether it did.
func (s *retryStream) retry(cur grpc.ClientStream, err error) bool {
	s.mu.Lock()
	n := s.attempt + 1
	ok := s.retriable && s.cur == cur && n < s.o.attempts
	s.mu.Unlock()
	if !ok {
		return false
	}
	hint, ok := retryHint(err, cur.Trailer())
	if !ok {
		return false
	}
	d, ok := s.o.wait(s.ctx, n, hint)
	if !ok || s.o.sleep(s.ctx, d) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.retriable || s.cur != cur {
		return false
	}
	next, nerr := s.streamer(s.ctx, s.desc, s.cc, s.method, s.callOpts...)
	if nerr != nil {
		return false
	}
	// A failed send or close shows as next's status when it is read.
	if s.req != nil {
		_ = next.SendMsg(s.req)
	}
	if s.closed {
		_ = next.CloseSend()
	}
	s.cur, s.attempt = next, n
	return true
}
