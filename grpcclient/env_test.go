package grpcclient_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/grpctest"
)

// The server side of the client tests: grpcmw's interceptors in front of
// grpctest's server (the health service and a hand-written chat stream).

const (
	pushbackKey = "grpc-retry-pushback-ms"
	mCheck      = "/grpc.health.v1.Health/Check"
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

// serveLimiter starts the test server (grpctest.Serve) behind l's
// interceptors.
func serveLimiter(t *testing.T, l *grpcmw.Limiter, dialOpts ...grpc.DialOption) *grpctest.Env {
	t.Helper()
	return grpctest.Serve(t, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
	}, dialOpts...)
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
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
