package grpcmw_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// A server limits each API key to one call a minute; the second call is
// refused with ResourceExhausted, and its details say when to come back and
// which policy was exhausted. (The fake clock makes the numbers exact.)
func Example() {
	clock := coretest.NewClock(time.Unix(0, 0))
	lim := core.MustNew(core.PerMinute(1).WithName("api"), core.WithClock(clock))
	limiter := grpcmw.MustNew(lim, grpcmw.KeyByMetadata("x-api-key"),
		// The example serves the health service, which is skipped by
		// default (SkipInfrastructure): WithSkip(nil) limits every method.
		grpcmw.WithSkip(nil))

	client, stop := serveHealth(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()),
	)
	defer stop()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "team-a")

	resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)

	var header metadata.MD
	_, err = client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	st := status.Convert(err)
	fmt.Println(st.Code(), st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			fmt.Println("retry in", d.RetryDelay.AsDuration())
		case *errdetails.QuotaFailure:
			fmt.Printf("quota %q: %s\n", d.Violations[0].Subject, d.Violations[0].Description)
		case *errdetails.ErrorInfo:
			fmt.Println(d.Reason, d.Domain)
		}
	}
	fmt.Println("retry-after:", header.Get("retry-after"), "ratelimit:", header.Get("ratelimit"))
	// Output:
	// SERVING <nil>
	// ResourceExhausted rate limit exceeded
	// retry in 1m0s
	// quota "api": 1 per 1m0s
	// RATE_LIMITED floodgate
	// retry-after: [60] ratelimit: ["api";r=0;t=60]
}

// Per-method policies: a strict limit on login, a default for the other
// methods, health and reflection skipped (the default), all by client IP.
// A method for which the function returns nil is not limited; give New a
// nil limiter and return nil for the others to limit one method alone.
func ExampleNew() {
	def := core.MustNew(core.PerSecond(100).WithName("api"))
	login := core.MustNew(core.PerMinute(5).WithName("login"))
	limiter, err := grpcmw.New(nil, grpcmw.MustKeyByPeerIP(),
		grpcmw.WithLimiterFunc(func(_ context.Context, fullMethod string) core.Limiter {
			if fullMethod == "/auth.v1.Auth/Login" {
				return login
			}
			return def
		}),
		grpcmw.WithMeterMessages(),
	)
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()),
	)
	defer srv.Stop()
	fmt.Println("ready")
	// Output: ready
}
