package grpcmw_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

// discard is a grpc.ServerTransportStream that drops metadata, so that the
// benchmarks measure the interceptor, not grpc's metadata joins.
type discard struct{}

func (discard) Method() string               { return mCheck }
func (discard) SetHeader(metadata.MD) error  { return nil }
func (discard) SendHeader(metadata.MD) error { return nil }
func (discard) SetTrailer(metadata.MD) error { return nil }

// BenchmarkUnary measures what the unary interceptor adds to a call, called
// in process with a handler that does nothing: "bare" is the handler alone.
func BenchmarkUnary(b *testing.B) {
	lots := core.MustNew(core.PerSecond(1_000_000_000))
	denying := core.MustNew(core.PerHour(1))
	_, _ = denying.Allow(context.Background(), "k", 1)
	info := &grpc.UnaryServerInfo{FullMethod: mCheck}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	base := grpc.NewContextWithServerTransportStream(context.Background(), discard{})
	withPeer := peerCtx(tcp("192.0.2.1:5000"))
	withPeer = grpc.NewContextWithServerTransportStream(withPeer, discard{})

	cases := []struct {
		name string
		ctx  context.Context
		ic   grpc.UnaryServerInterceptor
	}{
		{"bare", base, nil},
		{"allowed", base, grpcmw.MustNew(lots, grpcmw.Constant("k"), limitAll).UnaryServerInterceptor()},
		{"allowed-peerip", withPeer, grpcmw.MustNew(lots, grpcmw.MustKeyByPeerIP(), limitAll).UnaryServerInterceptor()},
		{"exempt", base, grpcmw.MustNew(lots, grpcmw.Constant("k")).UnaryServerInterceptor()},
		{"denied", base, grpcmw.MustNew(denying, grpcmw.Constant("k"), limitAll).UnaryServerInterceptor()},
		// A limit of requests in flight: each call takes a Lease and ends it.
		{"inflight", base, grpcmw.MustNew(core.MustNew(core.InFlight(1000)), grpcmw.Constant("k"), limitAll).UnaryServerInterceptor()},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			if c.ic == nil {
				for b.Loop() {
					_, _ = handler(c.ctx, nil)
				}
				return
			}
			for b.Loop() {
				_, _ = c.ic(c.ctx, nil, info, handler)
			}
		})
	}
}

// BenchmarkUnaryRealMetadata is "allowed" with grpc's own metadata
// handling included: a transport that joins metadata as grpc's does.
func BenchmarkUnaryRealMetadata(b *testing.B) {
	lots := core.MustNew(core.PerSecond(1_000_000_000))
	ic := grpcmw.MustNew(lots, grpcmw.Constant("k"), limitAll).UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: mCheck}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		ft := &fakeTransport{method: mCheck}
		ctx := grpc.NewContextWithServerTransportStream(context.Background(), ft)
		_, _ = ic(ctx, nil, info, handler)
	}
}

// BenchmarkLayered measures a call through two chained interceptors, both
// admitting, with and without WithRefundOnInnerRefusal on the outer one:
// the cost of recording its charge.
func BenchmarkLayered(b *testing.B) {
	info := &grpc.UnaryServerInfo{FullMethod: mCheck}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), discard{})
	for _, refund := range []bool{false, true} {
		opts := []grpcmw.Option{limitAll}
		if refund {
			opts = append(opts, grpcmw.WithRefundOnInnerRefusal())
		}
		outer := grpcmw.MustNew(core.MustNew(core.PerSecond(1_000_000_000)), grpcmw.Constant("k"), opts...).UnaryServerInterceptor()
		inner := grpcmw.MustNew(core.MustNew(core.PerSecond(1_000_000_000)), grpcmw.Constant("k"), limitAll).UnaryServerInterceptor()
		next := func(ctx context.Context, req any) (any, error) { return inner(ctx, req, info, handler) }
		b.Run(fmt.Sprintf("refund=%v", refund), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = outer(ctx, nil, info, next)
			}
		})
	}
}
