package grpcclient_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// The server side of the client tests: grpcmw's interceptors in front of
// the health service and a hand-written chat stream.

const (
	pushbackKey = "grpc-retry-pushback-ms"
	mCheck      = "/grpc.health.v1.Health/Check"
	mChat       = "/floodgate.test.Chat/Chat"
)

var t0 = time.Unix(1_700_000_000, 0)

// gcra makes an in-memory limiter on clock.
func gcra(t *testing.T, l core.Limit, clock core.Clock) *core.Keyed {
	t.Helper()
	lim, err := core.New(l.WithAlgorithm(core.GCRA), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// chatDesc is a bidirectional stream service written by hand: every
// request message is answered with one response.
var chatDesc = grpc.ServiceDesc{
	ServiceName: "floodgate.test.Chat",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Chat",
		ServerStreams: true,
		ClientStreams: true,
		Handler: func(_ any, ss grpc.ServerStream) error {
			for {
				var req healthpb.HealthCheckRequest
				if err := ss.RecvMsg(&req); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
				if err := ss.SendMsg(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
					return err
				}
			}
		},
	}},
}

type env struct {
	cc     *grpc.ClientConn
	health healthpb.HealthClient
}

// serveLimiter starts a real server on 127.0.0.1 behind l, with the health
// and chat services, and a client connected to it. Both stop with the test.
func serveLimiter(t *testing.T, l *grpcmw.Limiter, dialOpts ...grpc.DialOption) *env {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()), grpc.ChainStreamInterceptor(l.StreamServerInterceptor()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	srv.RegisterService(&chatDesc, struct{}{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		<-done
	})
	return &env{cc: cc, health: healthpb.NewHealthClient(cc)}
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// check calls Health.Check and returns its header and trailer metadata.
func (e *env) check(ctx context.Context) (header, trailer metadata.MD, err error) {
	_, err = e.health.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	return header, trailer, err
}

// chat opens the chat stream and exchanges n messages, returning the error
// of the first exchange that fails.
func chat(ctx context.Context, e *env, n int) (sent int, err error) {
	cs, err := e.cc.NewStream(ctx, &chatDesc.Streams[0], mChat)
	if err != nil {
		return 0, err
	}
	defer func() { _ = cs.CloseSend() }()
	for i := range n {
		if err := cs.SendMsg(&healthpb.HealthCheckRequest{}); err != nil && err != io.EOF {
			return i, err
		}
		var resp healthpb.HealthCheckResponse
		if err := cs.RecvMsg(&resp); err != nil {
			return i, err
		}
	}
	return n, nil
}

// recorder wraps a core.Limiter and keeps the keys it was asked about.
type recorder struct {
	core.Limiter
	mu   sync.Mutex
	keys []string
}

func (r *recorder) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := r.Limiter.Allow(ctx, key, cost)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	return d, err
}

func (r *recorder) snapshot() (keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}
