package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
)

// TestMain lets 8 parallel tests run at once (one per CPU under -race):
// the service's tests on Redis mostly wait, on a Cluster's start, a
// Sentinel's failover or health checks, and use little CPU.
func TestMain(m *testing.M) { redistest.Main(m, 8) }

// running is the command started by launch.
type running struct {
	addrs addresses
	out   *coretest.Buffer
	stop  func() error // cancels run and returns its error
}

// launch runs the command with env and args until the test ends, and
// returns once it listens.
func launch(t *testing.T, env map[string]string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan addresses, 1)
	done := make(chan error, 1)
	out := &coretest.Buffer{}
	go func() { done <- run(ctx, args, envOf(env), out, func(a addresses) { up <- a }) }()
	r := &running{out: out}
	select {
	case r.addrs = <-up:
	case err := <-done:
		cancel()
		t.Fatalf("the command ended before listening: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("the command did not listen within 30 s\n%s", out)
	}
	var once sync.Once
	var runErr error
	r.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("the command did not stop within 30 s")
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// dial is a gRPC client of addr with creds (plain when nil).
func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// service is the command started by start, and a client of its gRPC
// listener.
type service struct {
	*running
	t    *testing.T
	rls  rlsv3.RateLimitServiceClient
	conn *grpc.ClientConn
}

// start runs the command with args, its gRPC and HTTP listeners on
// 127.0.0.1:0 and no environment, as launch does, and connects to it.
func start(t *testing.T, args ...string) *service {
	t.Helper()
	r := launch(t, nil, append([]string{"-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, args...)...)
	conn := dial(t, r.addrs.grpc, nil)
	return &service{running: r, t: t, rls: rlsv3.NewRateLimitServiceClient(conn), conn: conn}
}

func (s *service) ask(domain string, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

func desc(kvs ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return d
}

// inSecond runs try with a fresh client address until a try starts and
// ends in the same second of the wall clock, and fails with what the
// try returned if it is not "". It gives up after 20 tries.
func inSecond(t *testing.T, try func(client string) string) {
	t.Helper()
	for i := range 20 {
		from := time.Now().Unix()
		msg := try(fmt.Sprintf("10.0.1.%d", i))
		if time.Now().Unix() != from {
			continue
		}
		if msg != "" {
			t.Fatal(msg)
		}
		return
	}
	t.Fatal("no try fitted in a second of the wall clock")
}

func TestSampleEndToEnd(t *testing.T) {
	s := start(t)
	const dom = "floodgate-sample"
	// Health: SERVING once the configuration is loaded.
	hc := healthpb.NewHealthClient(s.conn)
	for _, name := range []string{"", "envoy.service.ratelimit.v3.RateLimitService"} {
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: name})
		if err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q: %v %v", name, r, err)
		}
	}
	// /login: 5 a minute, all or nothing with the per-client limit.
	for i := range 5 {
		r := s.ask(dom, 0, desc("path=/login"), desc("remote_address=10.0.0.1"))
		if r.GetOverallCode() != rlsv3.RateLimitResponse_OK {
			t.Fatalf("login %d: %v", i, r)
		}
		if got := r.GetStatuses()[0].GetLimitRemaining(); got != uint32(4-i) {
			t.Fatalf("login %d: %d left", i, got)
		}
	}
	r := s.ask(dom, 0, desc("path=/login"), desc("remote_address=10.0.0.1"))
	if r.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT || r.GetStatuses()[0].GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT ||
		r.GetStatuses()[0].GetCurrentLimit().GetName() != "login" || r.GetStatuses()[0].GetCurrentLimit().GetUnit() != rlsv3.RateLimitResponse_RateLimit_MINUTE {
		t.Fatalf("the sixth login: %v", r)
	}
	retry := false
	for _, h := range r.GetResponseHeadersToAdd() {
		retry = retry || h.GetKey() == "Retry-After"
	}
	if !retry {
		t.Fatalf("no Retry-After on OVER_LIMIT: %v", r.GetResponseHeadersToAdd())
	}
	// The per-client limit is 10 a second, in windows of the clock's
	// seconds: each try runs within one second, from a fresh client (a
	// busy machine can take a second over a few calls; the window then
	// starts again under the test).
	inSecond(t, func(client string) string {
		// A refused login (the path's 5 a minute are spent) charges
		// nothing: of the client's 10, only this call's 1 is used.
		if r := s.ask(dom, 0, desc("path=/login"), desc("remote_address="+client)); r.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			return fmt.Sprintf("a login past the path's limit: %v", r)
		}
		if r := s.ask(dom, 0, desc("remote_address="+client)); r.GetStatuses()[0].GetLimitRemaining() != 9 {
			return fmt.Sprintf("per-client after a refused login: %d left, want 9", r.GetStatuses()[0].GetLimitRemaining())
		}
		// hits_addend is the cost; unlimited is never counted.
		r := s.ask(dom, 9, desc("remote_address="+client), desc("path=/healthz"))
		if r.GetOverallCode() != rlsv3.RateLimitResponse_OK || r.GetStatuses()[0].GetLimitRemaining() != 0 || r.GetStatuses()[1].GetLimitRemaining() != 1<<32-1 {
			return fmt.Sprintf("hits_addend 9 and unlimited: %v", r)
		}
		d := desc("remote_address=" + client)
		d.HitsAddend = wrapperspb.UInt64(1)
		if r = s.ask(dom, 0, d); r.GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			return fmt.Sprintf("per-client spent: %v", r)
		}
		return ""
	})
	// Shadow mode: counted, never refused.
	for i := range 700 {
		if r = s.ask(dom, 0, desc("api_key=k1")); r.GetOverallCode() != rlsv3.RateLimitResponse_OK {
			t.Fatalf("shadow call %d: %v", i, r)
		}
	}
	// /json, and the metrics.
	resp, err := http.Post("http://"+s.addrs.http+"/json", "application/json",
		strings.NewReader(`{"domain":"floodgate-sample","descriptors":[{"entries":[{"key":"path","value":"/login"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "OVER_LIMIT") {
		t.Fatalf("/json: %d %s", resp.StatusCode, body)
	}
	metrics := get(t, "http://"+s.addrs.http+"/metrics")
	for _, want := range []string{`floodgate_requests_total{limit="login",outcome="denied",shadow="false",transport="envoy-rls"}`, `outcome="denied",shadow="true"`} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if got := get(t, "http://"+s.addrs.http+"/healthcheck"); got != "OK" {
		t.Fatalf("/healthcheck: %q", got)
	}
	// Reflection lists the service.
	stream, err := reflectpb.NewServerReflectionClient(s.conn).ServerReflectionInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	lr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, sv := range lr.GetListServicesResponse().GetService() {
		found = found || sv.GetName() == "envoy.service.ratelimit.v3.RateLimitService"
	}
	if !found {
		t.Fatalf("reflection lists %v", lr.GetListServicesResponse().GetService())
	}
	_ = stream.CloseSend()
	if err := s.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRedisLog: go-redis's own messages become warnings in the service's
// structured log.
func TestRedisLog(t *testing.T) {
	var b strings.Builder
	l := redisLog{slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))}
	l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", 5, "connection refused")
	want := `level=WARN msg="redis client" detail="redis: connection pool: failed to dial after 5 attempts: connection refused"` + "\n"
	if b.String() != want {
		t.Fatalf("logged %q, want %q", b.String(), want)
	}
}

// healthy waits until the service at httpAddr answers /healthcheck with
// 200, which on Redis follows its first PING: a test that counts Redis's
// commands starts after it, so that PING is not among them.
func healthy(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for status(t, "http://"+httpAddr+"/healthcheck") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/healthcheck not OK 10 s after the start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runtimeRoot returns a RUNTIME_ROOT whose config directory holds one
// file, d.yaml, of yaml.
func runtimeRoot(t *testing.T, yaml string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "config"), "d.yaml", yaml)
	return root
}

// upstreamEnv is the environment, in upstream's variables, of a service on
// the Redis at addr with its configuration in root's config directory, its
// listeners on free ports of 127.0.0.1; more adds to it or overrides.
func upstreamEnv(addr, root string, more map[string]string) map[string]string {
	env := map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": addr,
		"RUNTIME_ROOT": root, "RUNTIME_WATCH_ROOT": "false", "USE_STATSD": "false",
		"HOST": "127.0.0.1", "PORT": "0", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0",
	}
	for k, v := range more {
		env[k] = v
	}
	return env
}
