package grpcmw_test

import (
	"context"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/overload"
)

// shedAsResourceExhausted answers the calls an overload guard shed with
// RESOURCE_EXHAUSTED instead of UNAVAILABLE, keeping the status's message
// and details (RetryInfo, ErrorInfo OVERLOADED): for clients whose retry
// policy retries UNAVAILABLE at once.
func shedAsResourceExhausted(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	resp, err := next(ctx, req)
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == grpcmw.Domain && info.Reason == grpcmw.ReasonOverloaded {
				p := st.Proto()
				p.Code = int32(codes.ResourceExhausted)
				return nil, status.ErrorProto(p)
			}
		}
	}
	return resp, err
}

// An adaptive concurrency limit on every method, whose sheds are answered
// RESOURCE_EXHAUSTED by an interceptor before it in the chain.
func ExampleReasonOverloaded() {
	guard, err := overload.NewAdaptive(overload.AdaptiveConfig{InitialLimit: 1, MinLimit: 1, MaxLimit: 1})
	if err != nil {
		panic(err)
	}
	l := grpcmw.MustNew(guard, grpcmw.KeyByMethod(), grpcmw.WithSkip(nil))

	client, stop := serveHealth(grpc.ChainUnaryInterceptor(shedAsResourceExhausted, l.UnaryServerInterceptor()))
	defer stop()

	// Another call holds the guard's only slot.
	held, _ := guard.Allow(context.Background(), "other", 1)
	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err))
	_ = held.Lease.Release(context.Background())
	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(status.Code(err))
	// Output:
	// ResourceExhausted
	// OK
}
