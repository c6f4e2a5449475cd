package grpcmw_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// slots admits up to max at once, each with a lease, and records refunds.
type slots struct {
	max int

	mu       sync.Mutex
	out      int
	refunds  []string
	released chan struct{}
}

func newSlots(max int) *slots { return &slots{max: max, released: make(chan struct{}, 16)} }

func (s *slots) Allow(_ context.Context, key string, _ int) (core.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out >= s.max {
		return core.Decision{Limit: core.PerSecond(s.max), RetryAfter: time.Second}, nil
	}
	s.out++
	return core.Decision{Allowed: true, Limit: core.PerSecond(s.max), Lease: core.NewLease(func(ctx context.Context, _ core.Ending) error {
		if ctx.Err() != nil {
			return errors.New("released under a cancelled context")
		}
		s.mu.Lock()
		s.out--
		s.mu.Unlock()
		s.released <- struct{}{}
		return nil
	})}, nil
}

func (s *slots) Refund(_ context.Context, key string, _ int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refunds = append(s.refunds, key)
	return nil
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out
}

// TestStreamLease checks that a stream holds its lease while its handler
// runs and gives it back when the handler returns or panics.
func TestStreamLease(t *testing.T) {
	t.Parallel()
	lim := newSlots(1)
	ic := grpcmw.MustNew(lim, grpcmw.Constant("k")).StreamServerInterceptor()
	info := &grpc.StreamServerInfo{FullMethod: "/test.Chat/Talk", IsServerStream: true}
	ctx, cancel := context.WithCancel(context.Background())
	err := ic(nil, &fakeStream{ctx: ctx}, info, func(any, grpc.ServerStream) error {
		if lim.inUse() != 1 {
			t.Errorf("%d slots in use while the stream runs, want 1", lim.inUse())
		}
		cancel() // the client goes away; the handler returns
		return status.FromContextError(ctx.Err()).Err()
	})
	if status.Code(err) != codes.Canceled || lim.inUse() != 0 {
		t.Fatalf("returned %v with %d slots in use", err, lim.inUse())
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		_ = ic(nil, &fakeStream{ctx: context.Background()}, info, func(any, grpc.ServerStream) error { panic("boom") })
	}()
	if lim.inUse() != 0 {
		t.Fatalf("%d slots in use after a panic", lim.inUse())
	}
}

// TestMeteredMessageLeases checks that a metered message holds its slot
// until the next RecvMsg or the end of the stream.
func TestMeteredMessageLeases(t *testing.T) {
	t.Parallel()
	// The opening and the messages are charged to the same limiter.
	msgs := newSlots(1)
	ic := grpcmw.MustNew(msgs, grpcmw.Constant("k"), grpcmw.WithMeterMessages()).StreamServerInterceptor()
	info := &grpc.StreamServerInfo{FullMethod: "/test.Chat/Talk", IsClientStream: true}
	// msgs admits the opening (slot 1 of 1); every message then needs the
	// slot, which the opening holds: refused.
	err := ic(nil, &fakeStream{ctx: context.Background(), n: 2}, info, func(_ any, ss grpc.ServerStream) error {
		if err := ss.RecvMsg(nil); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("first message: %v, want refused while the opening holds the only slot", err)
		}
		return nil
	})
	if err != nil || msgs.inUse() != 0 {
		t.Fatalf("returned %v with %d slots in use", err, msgs.inUse())
	}
	// With two slots, each message takes the second one and gives it back
	// at the next RecvMsg.
	two := newSlots(2)
	ic = grpcmw.MustNew(two, grpcmw.Constant("k"), grpcmw.WithMeterMessages()).StreamServerInterceptor()
	err = ic(nil, &fakeStream{ctx: context.Background(), n: 3}, info, func(_ any, ss grpc.ServerStream) error {
		for i := range 3 {
			if err := ss.RecvMsg(nil); err != nil {
				t.Errorf("message %d: %v", i+1, err)
			}
			if two.inUse() != 2 {
				t.Errorf("message %d: %d slots in use, want the opening's and this message's", i+1, two.inUse())
			}
		}
		return nil
	})
	if err != nil || two.inUse() != 0 {
		t.Fatalf("returned %v with %d slots in use after the stream", err, two.inUse())
	}
}

// TestLayeredStreams checks that an outer stream interceptor with
// WithRefundOnInnerRefusal is refunded when an inner one refuses, for
// streams as for unary calls.
func TestLayeredStreams(t *testing.T) {
	t.Parallel()
	outer := &recorder{Limiter: core.MustNew(core.PerMinute(10))}
	denying := core.MustNew(core.PerHour(1))
	_, _ = denying.Allow(context.Background(), "k", 1)
	chain := []grpc.StreamServerInterceptor{
		grpcmw.MustNew(outer, grpcmw.Constant("k"), grpcmw.WithRefundOnInnerRefusal()).StreamServerInterceptor(),
		grpcmw.MustNew(denying, grpcmw.Constant("k")).StreamServerInterceptor(),
	}
	info := &grpc.StreamServerInfo{FullMethod: "/test.Chat/Talk"}
	ss := &fakeStream{ctx: context.Background()}
	err := chain[0](nil, ss, info, func(srv any, ss grpc.ServerStream) error {
		return chain[1](srv, ss, info, func(any, grpc.ServerStream) error {
			t.Error("the handler ran")
			return nil
		})
	})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("inner refusal: %v", err)
	}
	if _, costs, _ := outer.snapshot(); len(costs) != 1 {
		t.Fatalf("outer asked %d times", len(costs))
	}
	outer.mu.Lock()
	defer outer.mu.Unlock()
	if len(outer.refunds) != 1 {
		t.Errorf("outer refunds %v, want one", outer.refunds)
	}
}

// TestLimitBridgeLease checks that Limit, which sees no end of the call,
// gives a lease back when the call's context ends.
func TestLimitBridgeLease(t *testing.T) {
	t.Parallel()
	lim := newSlots(1)
	l := grpcmw.MustNew(lim, grpcmw.Constant("k"), limitAll)
	ctx, cancel := context.WithCancel(grpc.NewContextWithServerTransportStream(context.Background(), &fakeTransport{method: mCheck}))
	if err := l.Limit(ctx); err != nil || lim.inUse() != 1 {
		t.Fatalf("Limit: %v, %d in use", err, lim.inUse())
	}
	cancel()
	select { // context.AfterFunc releases on a goroutine of its own
	case <-lim.released:
	case <-time.After(5 * time.Second):
		t.Fatal("no release 5s after the call's context ended")
	}
}

func TestFeatureOptions(t *testing.T) {
	t.Parallel()
	lim := core.MustNew(core.PerSecond(1))
	for _, tc := range []struct {
		opt  grpcmw.Option
		want string
	}{
		{grpcmw.WithDenialHold(-time.Second, 1), "WithDenialHold(-1s, 1): the hold must be positive"},
		{grpcmw.WithDenialHold(time.Second, 0), "WithDenialHold(1s, 0): at least 1 refusal"},
		{grpcmw.WithLimiterFunc(nil), "WithLimiterFunc(nil)"},
	} {
		if _, err := grpcmw.New(lim, grpcmw.Constant("k"), tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}
