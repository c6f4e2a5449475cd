package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/retry"
)

// TestDemo runs the self-test against a real loopback server on a fake
// clock, so that a slow machine cannot refill the bucket between calls,
// and checks what it prints.
func TestDemo(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	var waited time.Duration
	sleep := func(_ context.Context, d time.Duration) error {
		waited += d
		clock.Advance(d)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(retry.WithSleep(ctx, sleep), &out, clock); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.HasPrefix(got, "server on 127.0.0.1:") {
		t.Fatalf("output:\n%s", got)
	}
	_, got, _ = strings.Cut(got, "\n")
	const want = `call 1: OK  x-ratelimit-remaining: -  ratelimit: -
call 2: OK  x-ratelimit-remaining: -  ratelimit: -
call 3: OK  x-ratelimit-remaining: 0  ratelimit: "demo";r=0;t=1
call 4: ResourceExhausted  x-ratelimit-remaining: 0  ratelimit: "demo";r=0;t=1
  message       "rate limit exceeded"
  retry-after   1
  trailer       grpc-retry-pushback-ms: 334
  RetryInfo     retry in 333.333333ms
  QuotaFailure  policy "demo": 3 per 1s
  ErrorInfo     RATE_LIMITED in floodgate, map[limit:3 policy:demo remaining:0]
health check: SERVING  ratelimit: -
retrying client: OK after waiting as told
`
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if waited < 333333333*time.Nanosecond || waited > 500*time.Millisecond {
		t.Errorf("retrying client waited %v, want RetryInfo's 333.333333ms plus at most 100ms of jitter", waited)
	}
}

// started is a -serve server started by a test: runServer on a loopback
// port, and a client connection to it.
type started struct {
	cc     *grpc.ClientConn
	cancel context.CancelFunc // the stop signal
	done   chan error         // runServer's result
	out    *bytes.Buffer      // what it printed; read only after done
}

func startServer(t *testing.T, grace time.Duration) *started {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{cancel: cancel, done: make(chan error, 1), out: new(bytes.Buffer)}
	go func() { s.done <- runServer(ctx, lis, s.out, grace) }()
	s.cc, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cc.Close()
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("server still running 10s after the test ended")
		}
	})
	return s
}

// wait returns runServer's result, failing the test if it takes longer
// than limit.
func (s *started) wait(t *testing.T, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for Cleanup
		return err
	case <-time.After(limit):
		t.Fatalf("runServer still running %v after the stop signal", limit)
		return nil
	}
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// listServices asks server reflection (v1 or v1alpha) for the service
// names. The two versions' messages are the same on the wire, so v1's
// types serve both; only the method differs.
func listServices(ctx context.Context, cc *grpc.ClientConn, alpha bool) ([]string, error) {
	method := reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName
	if alpha {
		method = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
	}
	stream, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		return nil, err
	}
	req := &reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: "*"},
	}
	if err := stream.SendMsg(req); err != nil {
		return nil, err
	}
	resp := new(reflectionv1.ServerReflectionResponse)
	if err := stream.RecvMsg(resp); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, stream.CloseSend()
}

// TestServeInfrastructureExempt: under -serve, health answers SERVING and
// reflection lists the services, far more often than the limit allows,
// while the service itself is limited and says so in its metadata.
func TestServeInfrastructureExempt(t *testing.T) {
	t.Parallel()
	s := startServer(t, 5*time.Second)
	ctx := callCtx(t)
	health := healthpb.NewHealthClient(s.cc)
	wantServices := []string{
		"grpc.health.v1.Health",
		"grpc.reflection.v1.ServerReflection",
		"grpc.reflection.v1alpha.ServerReflection",
		"grpc.testing.TestService",
	}
	// Ten of each: more than the 3 a second the service allows.
	for i := range 10 {
		var header metadata.MD
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health check %d: %v, %v; want SERVING", i+1, resp.GetStatus(), err)
		}
		if v := header.Get("ratelimit"); len(v) != 0 {
			t.Errorf("health check %d carries rate-limit metadata %q; it should be exempt", i+1, v)
		}
		names, err := listServices(ctx, s.cc, i%2 == 1)
		if err != nil {
			t.Fatalf("reflection %d (v1alpha: %v): %v", i+1, i%2 == 1, err)
		}
		slices.Sort(names)
		if !slices.Equal(names, wantServices) {
			t.Errorf("reflection lists %q, want %q", names, wantServices)
		}
	}

	// The service is limited: its metadata comes once a call leaves at
	// most a tenth of the burst of 3 (the third in a row), or with a
	// refusal.
	var got []string
	for i := 0; i < 4 && len(got) == 0; i++ {
		var header metadata.MD
		_, err := testpb.NewTestServiceClient(s.cc).EmptyCall(ctx, &testpb.Empty{}, grpc.Header(&header))
		if err != nil && status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("EmptyCall: %v", err)
		}
		got = header.Get("x-ratelimit-limit")
	}
	if !slices.Equal(got, []string{"3"}) {
		t.Errorf("EmptyCall x-ratelimit-limit %q, want [3]: the service should be limited", got)
	}

	s.cancel()
	if err := s.wait(t, 10*time.Second); err != nil {
		t.Errorf("runServer: %v", err)
	}
	if !strings.Contains(s.out.String(), "grpcurl -plaintext 127.0.0.1:") {
		t.Errorf("output does not show how to reach the server:\n%s", s.out.String())
	}
}

// TestServeShutdown: cancelling the context (the stop signal) turns health
// NOT_SERVING and stops the server: at once when no call is running,
// after the grace period when a health Watch stays open, which is then cut
// off.
func TestServeShutdown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		watch   bool // keep a health Watch open across the stop
		grace   time.Duration
		wantErr bool
	}{
		{"idle: graceful", false, 10 * time.Second, false},
		{"watch open: cut off after the grace period", true, 100 * time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, tc.grace)
			ctx := callCtx(t)
			health := healthpb.NewHealthClient(s.cc)
			if resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("health check: %v, %v; want SERVING", resp.GetStatus(), err)
			}
			var watch grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
			if tc.watch {
				var err error
				if watch, err = health.Watch(ctx, &healthpb.HealthCheckRequest{}); err != nil {
					t.Fatal(err)
				}
				if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Fatalf("watch: %v, %v; want SERVING", resp.GetStatus(), err)
				}
			}

			s.cancel()
			if tc.watch {
				// Health goes NOT_SERVING before the server stops.
				if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
					t.Fatalf("watch after the stop signal: %v, %v; want NOT_SERVING", resp.GetStatus(), err)
				}
			}
			err := s.wait(t, tc.grace+10*time.Second)
			if (err != nil) != tc.wantErr {
				t.Errorf("runServer = %v, want error: %v", err, tc.wantErr)
			}
			if tc.watch {
				if _, err := watch.Recv(); status.Code(err) != codes.Unavailable && err != io.EOF {
					t.Errorf("watch after the stop: %v; want it cut off (Unavailable)", err)
				}
			}
			// The listener is closed: a new call cannot connect.
			if _, err := health.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
				t.Errorf("health check after the stop: %v; want Unavailable", err)
			}
			if !strings.HasSuffix(s.out.String(), "stopped\n") {
				t.Errorf("output:\n%s", s.out.String())
			}
		})
	}
}
