package grpcclient

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// WithThrottle makes the interceptors ask th (an overload.Throttle,
// Google SRE's client-side adaptive throttling) before each attempt of a
// call or stream, retries included, and tell it how the attempt ended.
// When th rejects an attempt, nothing is sent and the call fails with
// status UNAVAILABLE, carrying a RetryInfo detail when the backend's last
// refusal asked for a wait that is not over; the error also matches
// overload.ErrThrottled (errors.Is) and holds th's
// *overload.ThrottledError (errors.As). A stream whose retry th rejects
// ends with the refusal it would have retried.
//
// The backend refused an attempt for overload when it ended with
// RESOURCE_EXHAUSTED or UNAVAILABLE (which gRPC also gives for a backend
// it cannot reach), or DEADLINE_EXCEEDED. An attempt the caller cancelled
// says nothing and is not counted; any other ending is an accept. A
// stream's attempt ends with its headers, its first message or its end,
// whichever comes first. Use WithMaxAttempts(1) for throttling without
// retries. httpclient's WithThrottle does the same for HTTP.
func WithThrottle(th *overload.Throttle) Option {
	return func(o *options) {
		if o.errs.Require(th != nil, "WithThrottle(nil); make one with overload.NewThrottle, or leave the option out") {
			o.throttle = th
		}
	}
}

// throttledError is the error of an attempt the throttle rejected: a
// status for gRPC, the throttle's error for errors.Is and errors.As.
type throttledError struct {
	*overload.ThrottledError
	st *status.Status
}

// GRPCStatus makes the error a status to status.FromError and
// status.Code.
func (e *throttledError) GRPCStatus() *status.Status { return e.st }

// Unwrap returns the throttle's error.
func (e *throttledError) Unwrap() error { return e.ThrottledError }

// rejection is the error of an attempt the throttle rejected.
func (o *options) rejection() error {
	te := o.throttle.Rejection()
	st := status.New(codes.Unavailable, te.Error())
	if te.RetryAfter > 0 {
		if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(te.RetryAfter)}); err == nil {
			st = withInfo
		}
	}
	return &throttledError{ThrottledError: te, st: st}
}

// ending is how an attempt that ended with err (nil for OK) ended, for the
// throttle, and the wait a refusal asked for.
func ending(err error, trailer metadata.MD) (core.Ending, time.Duration) {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		d, _ := retryHint(err, trailer)
		return core.EndDropped, d
	case codes.Unavailable:
		st, _ := status.FromError(err)
		d, _ := retryInfo(st)
		return core.EndDropped, d
	case codes.DeadlineExceeded:
		return core.EndDropped, 0
	case codes.Canceled:
		return core.EndIgnored, 0
	}
	return core.EndDone, 0
}

// invoke makes one attempt of a unary call through invoker, asking the
// throttle first when there is one.
func (o *options) invoke(ctx context.Context, invoker grpc.UnaryInvoker, method string, req, reply any, cc *grpc.ClientConn, callOpts ...grpc.CallOption) error {
	if o.throttle == nil {
		return invoker(ctx, method, req, reply, cc, callOpts...)
	}
	tk, ok := o.throttle.Allow()
	if !ok {
		return o.rejection()
	}
	var trailer metadata.MD
	err := invoker(ctx, method, req, reply, cc, append(callOpts[:len(callOpts):len(callOpts)], grpc.Trailer(&trailer))...)
	tk.End(ending(err, trailer))
	return err
}

// streamer returns streamer, asking the throttle first when there is one.
func (o *options) streamer(streamer grpc.Streamer) grpc.Streamer {
	if o.throttle == nil {
		return streamer
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		tk, ok := o.throttle.Allow()
		if !ok {
			return nil, o.rejection()
		}
		cs, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil {
			tk.End(ending(err, nil))
			return nil, err
		}
		return &throttleStream{ClientStream: cs, tk: tk}, nil
	}
}

// throttleStream tells the throttle how a stream's attempt ended, once:
// at its headers, its first message or its end.
type throttleStream struct {
	grpc.ClientStream
	tk    overload.ThrottleTicket
	ended atomic.Bool
}

// end tells the throttle, the first time, that the attempt ended with
// err (nil or io.EOF: answered) and trailer.
func (s *throttleStream) end(err error, trailer metadata.MD) {
	if s.ended.CompareAndSwap(false, true) {
		if err == io.EOF {
			err = nil
		}
		s.tk.End(ending(err, trailer))
	}
}

// Header ends the attempt when the server sent headers: it answered.
// Without headers and without an error, the stream ended with a status
// that RecvMsg reads.
func (s *throttleStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil || md != nil {
		s.end(err, nil)
	}
	return md, err
}

func (s *throttleStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if s.ended.Load() {
		return err
	}
	var trailer metadata.MD
	if err != nil && err != io.EOF {
		// The trailer may be read only once RecvMsg has failed.
		trailer = s.ClientStream.Trailer()
	}
	s.end(err, trailer)
	return err
}
