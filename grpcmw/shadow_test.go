package grpcmw_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestShadowExhausted: an exhausted limit, a refusing one or a shaping one
// with a queue, given to WithShadow interceptors or chosen per call by
// them, never refuses a call or a metered message and never waits (the
// call's context has ended: a wait would fail it), through the unary and
// stream interceptors and the go-grpc-middleware bridge alike; the
// observer hears of every decision with what enforcing would have done,
// and no metadata is sent without WithHeaders.
func TestShadowExhausted(t *testing.T) {
	t.Parallel()
	const method = "/floodgate.test.Chat/Talk"
	kinds := []struct {
		name    string
		set     func(core.Limit) core.Limit
		outcome core.Outcome
	}{
		{"refusing", func(l core.Limit) core.Limit { return l.WithAlgorithm(core.GCRA) }, core.OutcomeDenied},
		{"shaping", func(l core.Limit) core.Limit { return l.WithMaxDelay(time.Hour) }, core.OutcomeShaped},
	}
	ways := []struct {
		name string
		new  func(s core.Limiter, opts ...grpcmw.Option) *grpcmw.Limiter
	}{
		{"given", func(s core.Limiter, opts ...grpcmw.Option) *grpcmw.Limiter {
			return grpcmw.MustNew(s, grpcmw.Constant("k"), opts...)
		}},
		{"chosen", func(s core.Limiter, opts ...grpcmw.Option) *grpcmw.Limiter {
			opts = append(opts, grpcmw.WithLimiterFunc(func(context.Context, string) core.Limiter { return s }))
			return grpcmw.MustNew(nil, grpcmw.Constant("k"), opts...)
		}},
	}
	// Each entry point makes one or more decisions and reports how many.
	entries := []struct {
		name string
		call func(ctx context.Context, l *grpcmw.Limiter) (int, error)
	}{
		{"unary", func(ctx context.Context, l *grpcmw.Limiter) (int, error) {
			_, err := l.UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, handled)
			return 1, err
		}},
		{"stream and 2 metered messages", func(ctx context.Context, l *grpcmw.Limiter) (int, error) {
			ss := &fakeStream{ctx: ctx, n: 2}
			return 3, l.StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{FullMethod: method}, func(_ any, ss grpc.ServerStream) error {
				for {
					if err := ss.RecvMsg(nil); err == io.EOF {
						return nil
					} else if err != nil {
						return err
					}
				}
			})
		}},
		{"bridge", func(ctx context.Context, l *grpcmw.Limiter) (int, error) {
			_, err := ratelimit.UnaryServerInterceptor(l)(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, handled)
			return 1, err
		}},
	}
	for _, kind := range kinds {
		for _, way := range ways {
			for _, entry := range entries {
				t.Run(kind.name+"/"+way.name+"/"+entry.name, func(t *testing.T) {
					t.Parallel()
					inner := gcraOpts(t, kind.set(core.PerMinute(1).WithName("trial")))
					if d, err := inner.Allow(context.Background(), "k", 1); err != nil || !d.Allowed || d.Delay != 0 {
						t.Fatalf("spending the quota: %+v, %v", d, err)
					}
					var mu sync.Mutex
					var events []core.Event
					obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
						mu.Lock()
						events = append(events, e)
						mu.Unlock()
					})
					l := way.new(inner, grpcmw.WithShadow(), grpcmw.WithObserver(obs), grpcmw.WithMeterMessages(),
						grpcmw.WithFailureMode(core.FailClosed), grpcmw.WithDenialHold(time.Hour, 8))
					ft := &fakeTransport{method: method}
					ctx, cancel := context.WithCancel(grpc.NewContextWithServerTransportStream(context.Background(), ft))
					cancel()
					n, err := entry.call(ctx, l)
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if len(ft.header) != 0 || len(ft.trailer) != 0 {
						t.Errorf("metadata sent: header %v, trailer %v; want none without WithHeaders", ft.header, ft.trailer)
					}
					mu.Lock()
					defer mu.Unlock()
					if len(events) != n {
						t.Fatalf("%d events, want %d", len(events), n)
					}
					for i, e := range events {
						if !e.Shadow || !e.Admitted || e.Outcome != kind.outcome || e.Held != 0 || e.Decision.Limit.Name != "trial" {
							t.Errorf("event %d: %+v; want a shadow event, admitted, %v, not held, by trial", i, e, kind.outcome)
						}
					}
				})
			}
		}
	}
}

func handled(context.Context, any) (any, error) { return "ok", nil }

// gcraOpts is an in-memory limiter of l, with opts, on a fake clock.
func gcraOpts(t *testing.T, l core.Limit, opts ...core.Option) *core.Keyed {
	t.Helper()
	k, err := core.New(l, append([]core.Option{core.WithClock(coretest.NewClock(t0))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
