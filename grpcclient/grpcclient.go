package grpcclient

import (
	"context"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// RetryDelay reports the retry delay a refusal asks for: the RetryInfo
// detail of a ResourceExhausted status error. ok is false for any other
// error, or when the status carries no usable RetryInfo.
func RetryDelay(err error) (d time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if err == nil || !isStatus || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	return retryInfo(st)
}

// retryInfo is the delay of st's RetryInfo detail, when it has a valid
// one.
func retryInfo(st *status.Status) (time.Duration, bool) {
	for _, det := range st.Details() {
		if ri, isRI := det.(*errdetails.RetryInfo); isRI && ri.GetRetryDelay() != nil {
			if err := ri.GetRetryDelay().CheckValid(); err != nil {
				return 0, false
			}
			if d := ri.GetRetryDelay().AsDuration(); d >= 0 {
				return d, true
			}
			return 0, false
		}
	}
	return 0, false
}

// pushbackKey is the trailer metadata key of a refusal's retry delay in
// whole milliseconds (gRFC A6), which grpcmw sets.
const pushbackKey = "grpc-retry-pushback-ms"

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
	vs := trailer.Get(pushbackKey)
	if len(vs) != 1 {
		return 0, false
	}
	ms, perr := strconv.ParseInt(vs[0], 10, 64)
	if perr != nil || ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// UnaryClientInterceptor returns a unary client interceptor that retries a
// call refused with ResourceExhausted and a retry delay (a RetryInfo
// detail, or grpc-retry-pushback-ms in the trailer): it waits the delay
// plus jitter (see WithBackoff) and tries again, up to WithMaxAttempts
// times in all. It gives up, returning the last refusal, when the next wait
// would reach the call's deadline, when the delay is longer than
// WithMaxWait's each or would take the call's waits past its total, or
// when the call's context ends while it waits.
// ResourceExhausted without a retry delay (such as a message over the size
// limit) and every other error are returned at once.
//
// It returns an error for invalid options.
func UnaryClientInterceptor(opts ...Option) (grpc.UnaryClientInterceptor, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		var trailer metadata.MD
		callOpts = append(callOpts[:len(callOpts):len(callOpts)], grpc.Trailer(&trailer))
		var spent time.Duration
		for n := 1; ; n++ {
			trailer = nil
			err := o.invoke(ctx, invoker, method, req, reply, cc, callOpts...)
			if err == nil || n >= o.Attempts {
				return err
			}
			hint, ok := retryHint(err, trailer)
			if !ok {
				return err
			}
			d, ok := o.Wait(ctx, n, hint, spent)
			if !ok || o.Sleep(ctx, d) != nil {
				return err
			}
			spent += d
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
func StreamClientInterceptor(opts ...Option) (grpc.StreamClientInterceptor, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		streamer = o.streamer(streamer)
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil || o.Attempts == 1 {
			return cs, err
		}
		return &retryStream{
			o: o, ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, callOpts: callOpts,
			cur: cs, retriable: true,
		}, nil
	}, nil
}
