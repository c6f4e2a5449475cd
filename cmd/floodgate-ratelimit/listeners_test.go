package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/tlstest"
)

// call asks the sample configuration's per-client limit over c.
func call(c *grpc.ClientConn) (*rlsv3.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rlsv3.NewRateLimitServiceClient(c).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "floodgate-sample", Descriptors: []*rlcommon.RateLimitDescriptor{desc("remote_address=10.0.0.9")}})
}

// healthOf is the gRPC health service's status of name over c.
func healthOf(t *testing.T, c *grpc.ClientConn, name string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := healthpb.NewHealthClient(c).Check(ctx, &healthpb.HealthCheckRequest{Service: name})
	if err != nil {
		t.Fatalf("health of %q: %v", name, err)
	}
	return r.GetStatus()
}

// TestUpstreamListeners: HOST/PORT, GRPC_HOST/GRPC_PORT, DEBUG_HOST/PORT
// and PROMETHEUS_ADDR/PATH place the listeners, each serving what
// upstream's does; the health service answers for "ratelimit".
func TestUpstreamListeners(t *testing.T) {
	r := launch(t, map[string]string{
		"HOST": "127.0.0.1", "PORT": "0", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0",
		"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0",
		"USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": "127.0.0.1:0", "PROMETHEUS_PATH": "/prom", "USE_STATSD": "false",
	})
	for what, a := range map[string]string{"grpc": r.addrs.grpc, "http": r.addrs.http, "debug": r.addrs.debug, "prometheus": r.addrs.prometheus} {
		if !strings.HasPrefix(a, "127.0.0.1:") || a == "127.0.0.1:0" {
			t.Fatalf("%s listens on %q", what, a)
		}
	}
	c := dial(t, r.addrs.grpc, nil)
	if resp, err := call(c); err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
		t.Fatalf("ShouldRateLimit: %v %v", resp, err)
	}
	for _, name := range []string{"", "ratelimit", "envoy.service.ratelimit.v3.RateLimitService"} {
		if st := healthOf(t, c, name); st != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q: %v", name, st)
		}
	}
	if got := get(t, "http://"+r.addrs.http+"/healthcheck"); got != "OK" {
		t.Fatalf("/healthcheck: %q", got)
	}
	prom := get(t, "http://"+r.addrs.prometheus+"/prom")
	if !strings.Contains(prom, `floodgate_requests_total{limit="per-client",outcome="allowed",shadow="false",transport="envoy-rls"} 1`) {
		t.Fatalf("/prom on PROMETHEUS_ADDR:\n%s", prom)
	}
	if code := status(t, "http://"+r.addrs.prometheus+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on PROMETHEUS_ADDR: %d, want 404 (PROMETHEUS_PATH is /prom)", code)
	}
	index := get(t, "http://"+r.addrs.debug+"/")
	for _, want := range []string{"/debug/pprof/: ", "/rlconfig: ", "/stats: "} {
		if !strings.Contains(index, want) {
			t.Fatalf("the debug index lacks %q:\n%s", want, index)
		}
	}
	if code := status(t, "http://"+r.addrs.debug+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK {
		t.Fatalf("pprof: %d", code)
	}
	if stats := get(t, "http://"+r.addrs.debug+"/stats"); !strings.Contains(stats, "memstats: ") {
		t.Fatalf("/stats:\n%s", stats)
	}
	conf := get(t, "http://"+r.addrs.debug+"/rlconfig")
	for _, want := range []string{
		"floodgate-sample.remote_address: unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false\n",
		"floodgate-sample.path_/login: unit=MINUTE requests_per_unit=5, shadow_mode: false, quota_mode: false, limits: 5 per 1m0s fixed-window; 100 per 1h0m0s fixed-window\n",
		"floodgate-sample.path_/healthz: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false\n",
	} {
		if !strings.Contains(conf, want) {
			t.Fatalf("/rlconfig lacks %q:\n%s", want, conf)
		}
	}
}

// status is the status code of a GET of url.
func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDisableStats: DISABLE_STATS=true serves no metrics.
func TestDisableStats(t *testing.T) {
	r := launch(t, map[string]string{"DISABLE_STATS": "true", "USE_PROMETHEUS": "true"}, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0")
	if code := status(t, "http://"+r.addrs.http+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics: %d, want 404", code)
	}
	if r.addrs.prometheus != "" {
		t.Fatalf("a Prometheus listener on %s", r.addrs.prometheus)
	}
}

// TestGRPCUDS: GRPC_UDS serves gRPC on a Unix socket, and a socket file
// left by a process gone does not stop the next from listening.
func TestGRPCUDS(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "rl.sock")
	for i := range 2 {
		r := launch(t, map[string]string{"GRPC_UDS": sock}, "-http", "")
		if r.addrs.grpc != "unix:"+sock {
			t.Fatalf("listens on %q", r.addrs.grpc)
		}
		if resp, err := call(dial(t, r.addrs.grpc, nil)); err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
			t.Fatalf("start %d: %v %v", i, resp, err)
		}
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// A crash leaves the socket file: make one no one listens on.
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
			if _, err := os.Stat(sock); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestGRPCTLS: GRPC_SERVER_USE_TLS serves TLS; with GRPC_CLIENT_TLS_CACERT
// a client needs a certificate of that CA, and with GRPC_CLIENT_TLS_SAN one
// for that name. A new certificate in the files is served without a
// restart.
func TestGRPCTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other")
	serverCert, serverKey := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	good := ca.KeyPair(t, dir, "good", x509.ExtKeyUsageClientAuth, "client.test")
	wrongSAN := ca.KeyPair(t, dir, "wrong", x509.ExtKeyUsageClientAuth, "intruder.test")
	foreign := other.KeyPair(t, dir, "foreign", x509.ExtKeyUsageClientAuth, "client.test")
	client := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: certs, ServerName: "127.0.0.1"})
	}
	base := map[string]string{"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": serverCert, "GRPC_SERVER_TLS_KEY": serverKey}

	t.Run("server TLS", func(t *testing.T) {
		r := launch(t, base, "-grpc", "127.0.0.1:0", "-http", "")
		if resp, err := call(dial(t, r.addrs.grpc, client())); err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
			t.Fatalf("over TLS: %v %v", resp, err)
		}
		if _, err := call(dial(t, r.addrs.grpc, nil)); err == nil {
			t.Fatal("a plaintext client was answered")
		}
	})
	t.Run("client certificates", func(t *testing.T) {
		r := launch(t, merged(base, map[string]string{"GRPC_CLIENT_TLS_CACERT": ca.File, "GRPC_CLIENT_TLS_SAN": "client.test"}), "-grpc", "127.0.0.1:0", "-http", "")
		if resp, err := call(dial(t, r.addrs.grpc, client(good))); err != nil || resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
			t.Fatalf("a good client: %v %v", resp, err)
		}
		for name, creds := range map[string]credentials.TransportCredentials{
			"no certificate": client(), "a wrong SAN": client(wrongSAN), "another CA": client(foreign),
		} {
			if _, err := call(dial(t, r.addrs.grpc, creds)); err == nil {
				t.Errorf("a client with %s was answered", name)
			}
		}
	})
	t.Run("certificate reloaded", func(t *testing.T) {
		r := launch(t, base, "-grpc", "127.0.0.1:0", "-http", "")
		first := served(t, r.addrs.grpc, ca)
		ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1") // new files, renamed over the old
		deadline := time.Now().Add(10 * time.Second)
		for served(t, r.addrs.grpc, ca).Cmp(first) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("still serving certificate %v 10 s after it was replaced", first)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// served returns the serial number of the certificate addr serves.
func served(t *testing.T, addr string, ca *tlstest.CA) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestMaxConnectionAge: GRPC_MAX_CONNECTION_AGE closes a connection that
// old (a GOAWAY), and the client connects again.
func TestMaxConnectionAge(t *testing.T) {
	t.Parallel()
	r := launch(t, map[string]string{"GRPC_MAX_CONNECTION_AGE": "200ms", "GRPC_MAX_CONNECTION_AGE_GRACE": "100ms"}, "-grpc", "127.0.0.1:0", "-http", "")
	c := dial(t, r.addrs.grpc, nil)
	if _, err := call(c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for st := c.GetState(); st == connectivity.Ready; st = c.GetState() {
		if !c.WaitForStateChange(ctx, st) {
			t.Fatal("the connection is still open 10 s after its maximum age")
		}
	}
	if _, err := call(c); err != nil {
		t.Fatalf("after the GOAWAY: %v", err)
	}
}

// TestLogFormat: LOG_FORMAT=json writes upstream's JSON lines, and
// LOG_LEVEL hides what is below it.
func TestLogFormat(t *testing.T) {
	r := launch(t, map[string]string{"LOG_FORMAT": "json"}, "-grpc", "127.0.0.1:0", "-http", "")
	r.stop()
	line, _, _ := strings.Cut(r.out.String(), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %q: %v", line, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, m["@timestamp"].(string)); err != nil || m["level"] != "info" || m["@message"] != "configuration loaded" && m["@message"] != "serving" {
		t.Fatalf("the first line: %v", m)
	}

	r = launch(t, map[string]string{"LOG_LEVEL": "warn"}, "-grpc", "127.0.0.1:0", "-http", "")
	r.stop()
	if r.out.String() != "" {
		t.Fatalf("LOG_LEVEL=warn logged:\n%s", r.out)
	}
}

// TestHTTPTimeouts: the HTTP servers close connections that are slow to
// send a request, slow to read the answer, or idle.
func TestHTTPTimeouts(t *testing.T) {
	for _, tc := range []struct {
		write time.Duration
	}{{httpWriteTimeout}, {debugWriteTimeout}} {
		s := newHTTPServer(http.NotFoundHandler(), tc.write)
		if s.ReadHeaderTimeout != 5*time.Second || s.ReadTimeout != 10*time.Second || s.WriteTimeout != tc.write || s.IdleTimeout != 2*time.Minute {
			t.Fatalf("timeouts: header %v, read %v, write %v, idle %v", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout)
		}
	}
	if httpWriteTimeout != 10*time.Second || debugWriteTimeout != 5*time.Minute {
		t.Fatalf("write timeouts %v and %v", httpWriteTimeout, debugWriteTimeout)
	}
}

// TestHealthWithConfig: with a configuration of no domain, the service
// is unhealthy by default and with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED
// =true, and healthy with it false, as upstream's.
func TestHealthWithConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  healthpb.HealthCheckResponse_ServingStatus
	}{
		{"", healthpb.HealthCheckResponse_NOT_SERVING},
		{"true", healthpb.HealthCheckResponse_NOT_SERVING},
		{"false", healthpb.HealthCheckResponse_SERVING},
	} {
		t.Run("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED="+tc.value, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := launch(t, map[string]string{"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED": tc.value}, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0")
			c := dial(t, r.addrs.grpc, nil)
			if st := healthOf(t, c, "ratelimit"); st != tc.want {
				t.Fatalf("health: %v, want %v", st, tc.want)
			}
			code := status(t, "http://"+r.addrs.http+"/healthcheck")
			if want := map[bool]int{true: 200, false: 500}[tc.want == healthpb.HealthCheckResponse_SERVING]; code != want {
				t.Fatalf("/healthcheck: %d, want %d", code, want)
			}
			write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "2"))
			waitFor(t, "SERVING once a domain is loaded", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
			// A reload that leaves no domain: NOT_SERVING again, as
			// upstream's, while the configuration is tracked.
			if err := os.Remove(filepath.Join(dir, "d.yaml")); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			waitFor(t, "health once no domain is left", func() bool { return healthOf(t, c, "ratelimit") == want })
		})
	}
}

// TestForceStart: a configuration directory that is not there stops the
// start, unless FORCE_START_WITHOUT_INITIAL_CONFIG: then the service
// starts NOT_SERVING and loads the directory once it appears.
func TestForceStart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "config")
	out := &coretest.Buffer{}
	if err := run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, noEnv, out, nil); err == nil {
		t.Fatal("started without its configuration directory")
	}
	r := launch(t, map[string]string{"FORCE_START_WITHOUT_INITIAL_CONFIG": "true"}, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
	c := dial(t, r.addrs.grpc, nil)
	if st := healthOf(t, c, "ratelimit"); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health without a configuration: %v", st)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "2"))
	waitFor(t, "SERVING once the directory is there", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
}

// TestRuntimeDir: RUNTIME_ROOT, RUNTIME_SUBDIRECTORY and
// RUNTIME_APPDIRECTORY name the configuration directory as upstream's.
func TestRuntimeDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "1"))
	r := launch(t, map[string]string{"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_WATCH_ROOT": "false"}, "-grpc", "127.0.0.1:0", "-http", "")
	c := dial(t, r.addrs.grpc, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		resp, err := rlsv3.NewRateLimitServiceClient(c).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*rlcommon.RateLimitDescriptor{desc("user=a")}})
		if err != nil || resp.GetOverallCode() != want {
			t.Fatalf("call %d: %v %v, want %v", i, resp, err, want)
		}
	}
}
