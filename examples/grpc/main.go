// Command grpc shows floodgate limiting a real gRPC server.
//
//	go run ./examples/grpc
//
// It serves grpc's health service on a loopback port behind grpcmw's
// interceptors, limited to 3 calls a second per client IP, makes four calls
// at once and prints what each got: the fourth is refused with
// ResourceExhausted, whose details say when to retry and which policy was
// exhausted. A client with grpcmw's retrying interceptor then waits that
// long on its own and gets through.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, nil, nil); err != nil {
		fmt.Fprintln(os.Stderr, "grpc example:", err)
		os.Exit(1)
	}
}

// run is the demo. Tests pass a fake clock and a sleep that moves it; nil
// means the real ones.
func run(ctx context.Context, out io.Writer, clock core.Clock, sleep func(context.Context, time.Duration) error) error {
	// The server: 3 calls a second per client IP, named "demo".
	opts := []core.Option{}
	if clock != nil {
		opts = append(opts, core.WithClock(clock))
	}
	lim, err := core.New(core.PerSecond(3).WithName("demo"), opts...)
	if err != nil {
		return err
	}
	limiter, err := grpcmw.New(lim, grpcmw.MustKeyByPeerIP())
	if err != nil {
		return err
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	fmt.Fprintf(out, "server on %s, limit %v per client IP\n", lis.Addr(), lim.Limit())

	// A plain client: four calls in a row.
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	for i := 1; i <= 4; i++ {
		var header, trailer metadata.MD
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
		st := status.Convert(err)
		fmt.Fprintf(out, "call %d: %v  x-ratelimit-remaining: %s  ratelimit: %s\n", i, st.Code(),
			first(header, "x-ratelimit-remaining"), first(header, "ratelimit"))
		if err == nil {
			continue
		}
		fmt.Fprintf(out, "  message       %q\n  retry-after   %s\n  trailer       %s: %s\n", st.Message(),
			first(header, "retry-after"), grpcmw.PushbackKey, first(trailer, grpcmw.PushbackKey))
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.RetryInfo:
				fmt.Fprintf(out, "  RetryInfo     retry in %v\n", d.RetryDelay.AsDuration())
			case *errdetails.QuotaFailure:
				fmt.Fprintf(out, "  QuotaFailure  policy %q: %s\n", d.Violations[0].Subject, d.Violations[0].Description)
			case *errdetails.ErrorInfo:
				fmt.Fprintf(out, "  ErrorInfo     %s in %s, %v\n", d.Reason, d.Domain, d.Metadata)
			}
		}
	}

	// A client that waits out refusals by itself.
	retryOpts := []grpcmw.ClientOption{grpcmw.WithMaxAttempts(3)}
	if sleep != nil {
		retryOpts = append(retryOpts, grpcmw.WithSleep(sleep))
	}
	retry, err := grpcmw.UnaryClientInterceptor(retryOpts...)
	if err != nil {
		return err
	}
	patient, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(retry))
	if err != nil {
		return err
	}
	defer patient.Close()
	resp, err := healthpb.NewHealthClient(patient).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("retrying client: %w", err)
	}
	fmt.Fprintf(out, "retrying client: %v after waiting as told\n", resp.GetStatus())
	return nil
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return "-"
}
