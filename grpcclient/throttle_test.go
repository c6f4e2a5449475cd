package grpcclient_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/grpcclient"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/grpctest"
	"github.com/floodgate/floodgate/overload"
)

// shedder refuses every call and stream with its code (and RetryInfo of
// 3s) while it holds one, and counts the calls and streams it sees.
type shedder struct {
	code atomic.Int32 // 0: serve
	got  atomic.Int64
}

func (s *shedder) refusal() error {
	c := codes.Code(s.code.Load())
	if c == codes.OK {
		return nil
	}
	st, err := status.New(c, "shed").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// Rands for a Throttle: rejecting whenever the probability is above 0,
// and never.
func zero() float64    { return 0 }
func nearOne() float64 { return math.Nextafter(1, 0) }

// throttleEnv serves Health and Chat behind a shedder, with a client whose
// interceptors ask a Throttle on a fake clock drawing from rnd.
func throttleEnv(t *testing.T, rnd func() float64, opts ...grpcclient.Option) (*grpctest.Env, *shedder, *overload.Throttle, *coretest.Clock) {
	t.Helper()
	clock := coretest.NewClock(t0)
	th, err := overload.NewThrottle(overload.ThrottleConfig{Clock: clock, Rand: rnd})
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]grpcclient.Option{grpcclient.WithThrottle(th)}, opts...)
	unary, err := grpcclient.UnaryClientInterceptor(opts...)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := grpcclient.StreamClientInterceptor(opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := &shedder{}
	e := grpctest.Serve(t, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			s.got.Add(1)
			if err := s.refusal(); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			s.got.Add(1)
			if err := s.refusal(); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}, grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
	return e, s, th, clock
}

// wantThrottled checks that err is a local rejection with probability p
// and the backend's wait left.
func wantThrottled(t *testing.T, err error, p float64, wait time.Duration) {
	t.Helper()
	var te *overload.ThrottledError
	if status.Code(err) != codes.Unavailable || !errors.Is(err, overload.ErrThrottled) || !errors.As(err, &te) {
		t.Fatalf("got %v, want a local rejection: UNAVAILABLE and ErrThrottled", err)
	}
	if te.Probability != p || te.RetryAfter != wait {
		t.Fatalf("rejection %+v, want probability %v and RetryAfter %v", te, p, wait)
	}
	st, _ := status.FromError(err)
	var info time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			info = ri.GetRetryDelay().AsDuration()
		}
	}
	if info != wait {
		t.Fatalf("RetryInfo %v, want %v", info, wait)
	}
}

// A backend that sheds makes the client reject calls and streams locally,
// unsent; once it recovers and the refusals leave the window, they go
// through again.
func TestThrottleUnaryAndStream(t *testing.T) {
	t.Parallel()
	e, s, _, clock := throttleEnv(t, zero, grpcclient.WithMaxAttempts(1))
	ctx := callCtx(t)
	for range 2 {
		if _, _, err := e.Check(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Chat(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	s.code.Store(int32(codes.Unavailable))
	// 4 accepts outweigh up to 4 refusals (K 2); the fifth tips it.
	for i := range 5 {
		var err error
		if i%2 == 0 {
			_, _, err = e.Check(ctx)
		} else {
			_, err = e.Chat(ctx, 1)
		}
		if status.Code(err) != codes.Unavailable || errors.Is(err, overload.ErrThrottled) {
			t.Fatalf("refusal %d: %v, want the server's UNAVAILABLE", i, err)
		}
	}
	if got := s.got.Load(); got != 9 {
		t.Fatalf("the server saw %d calls and streams, want 9", got)
	}
	clock.Advance(time.Second)
	_, _, err := e.Check(ctx)
	wantThrottled(t, err, 1.0/10, 2*time.Second)
	_, err = e.Chat(ctx, 1)
	wantThrottled(t, err, 1.0/10, 2*time.Second)
	if got := s.got.Load(); got != 9 {
		t.Fatalf("the server saw %d calls and streams after two local rejections, want 9", got)
	}
	s.code.Store(0)
	clock.Advance(10 * time.Second)
	if _, _, err := e.Check(ctx); err != nil {
		t.Fatalf("after the refusals left the window: %v", err)
	}
	if _, err := e.Chat(ctx, 1); err != nil {
		t.Fatalf("after the refusals left the window: %v", err)
	}
}

// Which endings count as refusals: each case is one call, then one
// stream, to a fresh throttle, whose probability is then 1/2 for a
// refusal (1 sent, none accepted) and 0 for an accept.
func TestThrottleEndingsGRPC(t *testing.T) {
	t.Parallel()
	for _, c := range []codes.Code{codes.OK, codes.NotFound, codes.Internal, codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded} {
		want := 0.0
		if c == codes.ResourceExhausted || c == codes.Unavailable || c == codes.DeadlineExceeded {
			want = 0.5
		}
		for _, stream := range []bool{false, true} {
			e, s, th, _ := throttleEnv(t, nearOne, grpcclient.WithMaxAttempts(1))
			s.code.Store(int32(c))
			var err error
			if stream {
				_, err = e.Chat(callCtx(t), 1)
			} else {
				_, _, err = e.Check(callCtx(t))
			}
			if status.Code(err) != c {
				t.Fatalf("%v (stream %v): got %v", c, stream, err)
			}
			if got := th.Probability(); got != want {
				t.Errorf("after %v (stream %v): probability %v, want %v", c, stream, got, want)
			}
		}
	}
	// A call the caller cancelled is not counted: after a refusal, the
	// probability stays 1/2.
	e, s, th, _ := throttleEnv(t, nearOne, grpcclient.WithMaxAttempts(1))
	s.code.Store(int32(codes.Unavailable))
	_, _, _ = e.Check(callCtx(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := e.Check(ctx); status.Code(err) != codes.Canceled || th.Probability() != 0.5 {
		t.Errorf("a cancelled call after a refusal: %v, probability %v; want Canceled and 1/2", err, th.Probability())
	}
}

// A stream's attempt ends with its headers: a client that reads them and
// nothing yet has its stream counted as accepted.
func TestThrottleStreamHeader(t *testing.T) {
	t.Parallel()
	e, s, th, _ := throttleEnv(t, nearOne, grpcclient.WithMaxAttempts(1))
	s.code.Store(int32(codes.Unavailable))
	_, _, _ = e.Check(callCtx(t))
	s.code.Store(0)
	cs, err := e.Conn.NewStream(callCtx(t), &grpctest.ChatService.Streams[0], grpctest.ChatMethod)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendMsg(&healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Header(); err != nil {
		t.Fatal(err)
	}
	// 2 sent, 1 accepted: (2 − 2·1)/3.
	if got := th.Probability(); got != 0 {
		t.Errorf("a refused call, then a stream with headers: probability %v, want 0", got)
	}
	_ = cs.CloseSend()
}

// Each retry asks the throttle: a shedding backend gets the first attempt
// of a call or a stream, and the retry is rejected locally (1 sent, 1
// refused: probability 1/2) rather than sent.
func TestThrottleRetriesGRPC(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		sl := &sleeper{clock: coretest.NewClock(t0)}
		e, s, _, _ := throttleEnv(t, zero, grpcclient.WithSleep(sl.sleep), grpcclient.WithRand(half))
		s.code.Store(int32(codes.ResourceExhausted))
		var err error
		if stream {
			// A server stream (Watch: a stream sent nothing yet is
			// retried) whose retry is rejected ends with the refusal.
			var st healthpb.Health_WatchClient
			if st, err = e.Health.Watch(longCtx(t), &healthpb.HealthCheckRequest{}); err == nil {
				_, err = st.Recv()
			}
			if status.Code(err) != codes.ResourceExhausted || errors.Is(err, overload.ErrThrottled) {
				t.Fatalf("stream: %v, want the server's refusal", err)
			}
		} else {
			_, _, err = e.Check(longCtx(t))
			wantThrottled(t, err, 0.5, 3*time.Second)
		}
		if got, waits := s.got.Load(), sl.got(); got != 1 || len(waits) != 1 {
			t.Fatalf("stream %v: the server saw %d attempts after %d waits, want 1 and 1", stream, got, len(waits))
		}
	}
}

func TestWithThrottleNil(t *testing.T) {
	t.Parallel()
	if _, err := grpcclient.UnaryClientInterceptor(grpcclient.WithThrottle(nil)); err == nil {
		t.Error("WithThrottle(nil) was accepted")
	}
}

// The recovery goal through a real server: a client making 50
// calls a second (on the throttle's fake clock) to a backend that sheds
// everything for 30s is back to at least 90 % of its throughput (a
// rejection probability of at most 0.1, from then on) within one window
// of the backend's recovery.
func TestThrottleRecoveryGRPC(t *testing.T) {
	t.Parallel()
	src := rand.New(rand.NewPCG(7, 33))
	e, s, th, clock := throttleEnv(t, src.Float64, grpcclient.WithMaxAttempts(1))
	ctx := callCtx(t)
	coretest.Outage{
		Clock: clock, Start: t0, Window: 10 * time.Second, // the default
		Probability: th.Probability,
		Shed: func(on bool) {
			if on {
				s.code.Store(int32(codes.Unavailable))
			} else {
				s.code.Store(0)
			}
		},
		Served: s.got.Load,
		Call: func() error {
			if _, _, err := e.Check(ctx); err != nil && status.Code(err) != codes.Unavailable {
				return err
			}
			return nil
		},
	}.Run(t)
}
