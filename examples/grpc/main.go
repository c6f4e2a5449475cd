// Command grpc shows floodgate limiting a real gRPC server.
//
//	go run ./examples/grpc                 # self-test: print what each call got, exit
//	go run ./examples/grpc -serve          # serve on 127.0.0.1:50051 until Ctrl-C, for grpcurl
//	go run ./examples/grpc -serve -addr 127.0.0.1:0
//
// The server stands grpc-go's interop test service (grpc.testing.TestService)
// in for your own, behind grpcmw's interceptors, limited to 3 calls a second
// per client IP. The health service and server reflection run beside it,
// exempt from the limit.
//
// The self-test makes four calls at once and prints what each got: the
// fourth is refused with ResourceExhausted, whose details say when to retry
// and which policy was exhausted. A health check still answers. A client
// with grpcmw's retrying interceptor then waits as told on its own and gets
// through.
//
// With -serve it prints its address and serves until SIGINT or SIGTERM,
// then stops gracefully: health turns NOT_SERVING, calls in flight finish,
// and after a grace period any left (such as a health Watch) are cut off.
// Try, with the address it prints:
//
//	grpcurl -plaintext 127.0.0.1:50051 list
//	grpcurl -plaintext 127.0.0.1:50051 grpc.health.v1.Health/Check
//	grpcurl -plaintext -v 127.0.0.1:50051 grpc.testing.TestService/EmptyCall
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcclient"
	"github.com/floodgate/floodgate/grpcmw"
)

// gracePeriod bounds how long a stopping server waits for calls in flight.
const gracePeriod = 5 * time.Second

func main() {
	serve := flag.Bool("serve", false, "serve until SIGINT or SIGTERM instead of running the self-test")
	addr := flag.String("addr", "127.0.0.1:50051", "address to listen on with -serve (127.0.0.1:0 picks a free port)")
	flag.Parse()

	var err error
	if *serve {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		var lis net.Listener
		if lis, err = net.Listen("tcp", *addr); err == nil {
			err = runServer(ctx, lis, os.Stdout, gracePeriod)
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = run(ctx, os.Stdout, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc example:", err)
		os.Exit(1)
	}
}

// policy is the example's limit: 3 calls a second per client IP.
var policy = core.PerSecond(3).WithName("demo")

// service stands in for yours. grpc-go ships its descriptors, so grpcurl
// can call it through reflection. Its other methods answer Unimplemented.
type service struct {
	testpb.UnimplementedTestServiceServer
}

// EmptyCall answers at once.
func (service) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// newServer builds the server: the service limited by policy, health and
// reflection beside it and exempt. clock nil means the system clock.
func newServer(clock core.Clock) (*grpc.Server, *health.Server, error) {
	var opts []core.Option
	if clock != nil {
		opts = append(opts, core.WithClock(clock))
	}
	lim, err := core.New(policy, opts...)
	if err != nil {
		return nil, nil, err
	}
	// Health and reflection are exempt by default: a load balancer's health
	// checks and a developer's grpcurl spend no quota and are never refused.
	// Rate-limit metadata goes with refusals and with calls that leave at
	// most a tenth of the burst (here the last); grpcmw.WithHeaders sends
	// it on every call.
	limiter, err := grpcmw.New(lim, grpcmw.MustKeyByPeerIP())
	if err != nil {
		return nil, nil, err
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(limiter.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(limiter.StreamServerInterceptor()),
	)
	testpb.RegisterTestServiceServer(srv, service{})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	return srv, hs, nil
}

// runServer is what -serve does: it serves on lis until ctx ends, then
// stops as serveUntil does.
func runServer(ctx context.Context, lis net.Listener, out io.Writer, grace time.Duration) error {
	srv, hs, err := newServer(nil)
	if err != nil {
		lis.Close()
		return err
	}
	addr := lis.Addr().String()
	fmt.Fprintf(out, "serving gRPC on %s: grpc.testing.TestService limited to %s; health and reflection exempt\n", addr, describe(policy))
	fmt.Fprintf(out, "try:\n  grpcurl -plaintext %[1]s list\n  grpcurl -plaintext %[1]s grpc.health.v1.Health/Check\n  grpcurl -plaintext -v %[1]s grpc.testing.TestService/EmptyCall\n", addr)
	fmt.Fprintln(out, "Ctrl-C or SIGTERM stops it")
	err = serveUntil(ctx, lis, srv, hs, grace)
	fmt.Fprintln(out, "stopped")
	return err
}

// serveUntil serves srv on lis until ctx ends, then stops gracefully:
// health reports NOT_SERVING, so that load balancers stop sending new
// calls, and the calls in flight may finish. Calls still running after
// grace (a health Watch runs until its client leaves) are cut off, and
// serveUntil says so with an error.
func serveUntil(ctx context.Context, lis net.Listener, srv *grpc.Server, hs *health.Server, grace time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	var err error
	select {
	case <-stopped:
	case <-timer.C:
		srv.Stop()
		<-stopped
		err = fmt.Errorf("calls still running %v after the stop signal were cut off", grace)
	}
	// Serve returns nil once GracefulStop or Stop is called.
	return errors.Join(err, <-served)
}

// run is the self-test. Tests pass a fake clock (nil means the real one),
// and a ctx whose retries move it rather than sleep.
func run(ctx context.Context, out io.Writer, clock core.Clock) (err error) {
	srv, hs, err := newServer(clock)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serveUntil(serveCtx, lis, srv, hs, gracePeriod) }()
	defer func() {
		stopServing()
		err = errors.Join(err, <-served)
	}()
	fmt.Fprintf(out, "server on %s, limit %s\n", lis.Addr(), describe(policy))

	// A plain client: four calls in a row.
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	client := testpb.NewTestServiceClient(cc)
	for i := 1; i <= 4; i++ {
		var header, trailer metadata.MD
		_, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.Header(&header), grpc.Trailer(&trailer))
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

	// Health is exempt: it answers while the client is limited.
	var header metadata.MD
	hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	fmt.Fprintf(out, "health check: %v  ratelimit: %s\n", hr.GetStatus(), first(header, "ratelimit"))

	// A client that waits out refusals by itself.
	retry, err := grpcclient.UnaryClientInterceptor(grpcclient.WithMaxAttempts(3))
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
	if _, err := testpb.NewTestServiceClient(patient).EmptyCall(ctx, &testpb.Empty{}); err != nil {
		return fmt.Errorf("retrying client: %w", err)
	}
	fmt.Fprintln(out, "retrying client: OK after waiting as told")
	return nil
}

func describe(l core.Limit) string {
	return fmt.Sprintf("%d per %v per client IP (policy %q)", l.Events, l.Period, l.Name)
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return "-"
}
