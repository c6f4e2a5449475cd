package grpctest_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/internal/grpctest"
)

// A server with an interceptor of each kind in front of its services
// (where a test puts a limiter's), one health check and one chat of three
// exchanges through them. Tests call Serve, which stops both ends in
// t.Cleanup.
func Example() {
	e, err := grpctest.Start([]grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			fmt.Println("unary", info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			fmt.Println("stream", info.FullMethod)
			return h(srv, ss)
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resp, err := e.Health.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	sent, err := e.Chat(ctx, 3)
	fmt.Println(sent, err)
	// Output:
	// unary /grpc.health.v1.Health/Check
	// SERVING <nil>
	// stream /floodgate.test.Chat/Chat
	// 3 <nil>
}
