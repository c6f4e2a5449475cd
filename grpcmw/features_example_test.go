package grpcmw_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// A global limit on every method, then a stricter one on List: the global
// Limiter gives back what it charged a List call that the inner one
// refuses, and free API keys get a smaller global policy than paid ones.
func ExampleWithRefundOnInnerRefusal() {
	clock := coretest.NewClock(time.Unix(0, 0))
	free := core.MustNew(core.PerMinute(10).WithName("free"), core.WithClock(clock))
	paid := core.MustNew(core.PerMinute(1000).WithName("paid"), core.WithClock(clock))
	list := core.MustNew(core.PerMinute(1).WithName("list"), core.WithClock(clock))
	key := grpcmw.KeyByMetadata("x-api-key")

	// WithHeaders(core.HeadersBoth): every call's metadata, to show the quotas.
	global := grpcmw.MustNew(nil, key, grpcmw.WithHeaders(core.HeadersBoth),
		// The example serves the health service, which is skipped by
		// default (SkipInfrastructure): WithSkip(nil) limits every method.
		grpcmw.WithSkip(nil),
		grpcmw.WithRefundOnInnerRefusal(),
		grpcmw.WithLimiterFunc(func(ctx context.Context, _ string) core.Limiter {
			if k := metadata.ValueFromIncomingContext(ctx, "x-api-key"); len(k) == 1 && strings.HasPrefix(k[0], "paid-") {
				return paid
			}
			return free
		}))
	inner := grpcmw.MustNew(list, key, grpcmw.WithHeaders(core.HeadersBoth),
		grpcmw.WithSkip(func(_ context.Context, m string) bool { return m != "/grpc.health.v1.Health/List" }))

	client, stop := serveHealth(grpc.ChainUnaryInterceptor(global.UnaryServerInterceptor(), inner.UnaryServerInterceptor()))
	defer stop()

	for _, call := range []struct{ key, method string }{
		{"team-a", "List"}, {"team-a", "List"}, {"team-a", "List"}, {"team-a", "Check"}, {"paid-b", "Check"},
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", call.key)
		var header metadata.MD
		var err error
		if call.method == "List" {
			_, err = client.List(ctx, &healthpb.HealthListRequest{}, grpc.Header(&header))
		} else {
			_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		}
		fmt.Println(call.key, call.method, status.Code(err), header.Get("ratelimit"))
	}
	// Output:
	// team-a List OK ["free";r=9;t=6 "list";r=0;t=60]
	// team-a List ResourceExhausted ["free";r=8;t=12 "list";r=0;t=60]
	// team-a List ResourceExhausted ["free";r=8;t=12 "list";r=0;t=60]
	// team-a Check OK ["free";r=8;t=12]
	// paid-b Check OK ["paid";r=999;t=1]
}
