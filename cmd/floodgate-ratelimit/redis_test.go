package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/tlstest"
)

// fakeMulti decides each charge by its key: a key starting with "no"
// is refused, one starting with "err" fails the call with err. It records
// its calls.
type fakeMulti struct {
	name    string
	err     error
	mu      sync.Mutex
	allows  [][]string
	refunds [][]string
}

func keys(cs []rls.Charge) []string {
	var ks []string
	for _, c := range cs {
		ks = append(ks, c.Key)
	}
	return ks
}

func (f *fakeMulti) AllowAll(_ context.Context, cs []rls.Charge) ([]core.Decision, error) {
	f.mu.Lock()
	f.allows = append(f.allows, keys(cs))
	f.mu.Unlock()
	var ds []core.Decision
	for _, c := range cs {
		if strings.HasPrefix(c.Key, "err") {
			return nil, f.err
		}
		ds = append(ds, core.Decision{Allowed: !strings.HasPrefix(c.Key, "no"), Remaining: len(c.Key)})
	}
	return ds, nil
}

func (f *fakeMulti) RefundAll(_ context.Context, cs []rls.Charge) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refunds = append(f.refunds, keys(cs))
	return nil
}

// TestSplitMulti: the charges of per-second limits go to the per-second
// Redis and the others to the main one; a call on both stays all or
// nothing, the side that admitted refunded when the other refuses or
// fails.
func TestSplitMulti(t *testing.T) {
	second := []core.Limit{core.PerSecond(5)}
	minute := []core.Limit{core.PerMinute(5)}
	storeErr := &core.StoreError{Err: errors.New("connection refused")}
	charge := func(key string, limits []core.Limit) rls.Charge { return rls.Charge{Key: key, Limits: limits, Cost: 1} }
	for _, tc := range []struct {
		name                     string
		charges                  []rls.Charge
		allowed                  []bool // nil: an error
		secAllows, othAllows     [][]string
		secRefunds, othRefunds   [][]string
		store, partial, anyError bool
	}{
		{name: "per second only", charges: []rls.Charge{charge("s1", second), charge("s2", second)}, allowed: []bool{true, true},
			secAllows: [][]string{{"s1", "s2"}}},
		{name: "others only", charges: []rls.Charge{charge("m1", minute), charge("no-m2", minute)}, allowed: []bool{true, false},
			othAllows: [][]string{{"m1", "no-m2"}}},
		{name: "both admit", charges: []rls.Charge{charge("m1", minute), charge("s1", second), charge("m2", minute)}, allowed: []bool{true, true, true},
			secAllows: [][]string{{"s1"}}, othAllows: [][]string{{"m1", "m2"}}},
		{name: "per second refuses", charges: []rls.Charge{charge("m1", minute), charge("no-s1", second)}, allowed: []bool{true, false},
			secAllows: [][]string{{"no-s1"}}, othAllows: [][]string{{"m1"}}, othRefunds: [][]string{{"m1"}}},
		{name: "the other refuses", charges: []rls.Charge{charge("no-m1", minute), charge("s1", second), charge("s2", second)}, allowed: []bool{false, true, true},
			secAllows: [][]string{{"s1", "s2"}}, othAllows: [][]string{{"no-m1"}}, secRefunds: [][]string{{"s1", "s2"}}},
		{name: "both refuse", charges: []rls.Charge{charge("no-m1", minute), charge("no-s1", second)}, allowed: []bool{false, false},
			secAllows: [][]string{{"no-s1"}}, othAllows: [][]string{{"no-m1"}}},
		{name: "per second fails", charges: []rls.Charge{charge("m1", minute), charge("err-s1", second)},
			secAllows: [][]string{{"err-s1"}}, othAllows: [][]string{{"m1"}}, othRefunds: [][]string{{"m1"}}, store: true, partial: true, anyError: true},
		{name: "both fail", charges: []rls.Charge{charge("err-m1", minute), charge("err-s1", second)},
			secAllows: [][]string{{"err-s1"}}, othAllows: [][]string{{"err-m1"}}, store: true, anyError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec, oth := &fakeMulti{name: "second", err: storeErr}, &fakeMulti{name: "other", err: storeErr}
			m := splitMulti{other: oth, second: sec}
			ds, err := m.AllowAll(context.Background(), tc.charges)
			if (err != nil) != tc.anyError || errors.Is(err, core.ErrStore) != tc.store || errors.Is(err, rls.ErrPartial) != tc.partial {
				t.Fatalf("error %v: store %v, partial %v", err, errors.Is(err, core.ErrStore), errors.Is(err, rls.ErrPartial))
			}
			if err == nil {
				var got []bool
				for i, d := range ds {
					got = append(got, d.Allowed)
					if d.Remaining != len(tc.charges[i].Key) {
						t.Fatalf("decision %d is another charge's: %+v", i, d)
					}
				}
				if !slices.Equal(got, tc.allowed) {
					t.Fatalf("allowed %v, want %v", got, tc.allowed)
				}
			}
			for _, c := range []struct {
				what      string
				got, want [][]string
			}{
				{"per-second calls", sec.allows, tc.secAllows}, {"other calls", oth.allows, tc.othAllows},
				{"per-second refunds", sec.refunds, tc.secRefunds}, {"other refunds", oth.refunds, tc.othRefunds},
			} {
				if !slices.EqualFunc(c.got, c.want, slices.Equal) {
					t.Fatalf("%s %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
	t.Run("refund", func(t *testing.T) {
		sec, oth := &fakeMulti{}, &fakeMulti{}
		m := splitMulti{other: oth, second: sec}
		if err := m.RefundAll(context.Background(), []rls.Charge{charge("m1", minute), charge("s1", second), charge("m2", minute)}); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(sec.refunds, [][]string{{"s1"}}, slices.Equal) || !slices.EqualFunc(oth.refunds, [][]string{{"m1", "m2"}}, slices.Equal) {
			t.Fatalf("refunds: per second %q, other %q", sec.refunds, oth.refunds)
		}
	})
}

// secondAndMinute are per-second and per-minute rules (a token bucket of
// one a second, so that a second call within the second is refused
// whenever it comes).
const secondAndMinute = `domain: d
descriptors:
  - key: sec
    rate_limit:
      unit: second
      requests_per_unit: 1
      algorithm: token-bucket
  - key: min
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: min1
    rate_limit:
      unit: minute
      requests_per_unit: 1
`

// ask sends one request of descriptors ds to domain d over c.
func ask(t *testing.T, c *grpc.ClientConn, ds ...*rlcommon.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := rlsv3.NewRateLimitServiceClient(c).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// allKeys are the keys srv holds.
func allKeys(t *testing.T, srv *redistest.Server, password string) []string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password})
	defer c.Close()
	ks, err := c.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	return ks
}

// TestPerSecondRedis: with REDIS_PERSECOND, per-second limits are kept on
// REDIS_PERSECOND_URL's Redis and the others on REDIS_URL's, and a
// request on both is still all or nothing.
func TestPerSecondRedis(t *testing.T) {
	t.Parallel()
	main, sec := redistest.Start(t), redistest.Start(t)
	dir := t.TempDir()
	write(t, dir, "d.yaml", secondAndMinute)
	r := launch(t, map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": main.Addr(),
		"REDIS_PERSECOND": "true", "REDIS_PERSECOND_SOCKET_TYPE": "tcp", "REDIS_PERSECOND_URL": sec.Addr(),
	}, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
	c := dial(t, r.addrs.grpc, nil)
	waitFor(t, "SERVING once both Redis answer", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })

	if got := ask(t, c, desc("sec=a"), desc("min=a")).GetOverallCode(); got != rlsv3.RateLimitResponse_OK {
		t.Fatalf("the first call: %v", got)
	}
	mk, sk := allKeys(t, main, ""), allKeys(t, sec, "")
	if len(mk) != 1 || !strings.Contains(mk[0], "min") || len(sk) != 1 || !strings.Contains(sk[0], "sec") {
		t.Fatalf("keys: main %q, per second %q", mk, sk)
	}
	// The per-second limit refuses: the minute's charge is given back.
	refused := false
	for attempt := 0; attempt < 3 && !refused; attempt++ {
		v := fmt.Sprint("b", attempt)
		ask(t, c, desc("sec="+v), desc("min="+v))
		if ask(t, c, desc("sec="+v), desc("min="+v)).GetOverallCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			continue // more than a second passed between the calls
		}
		refused = true
		if left := ask(t, c, desc("min="+v)).GetStatuses()[0].GetLimitRemaining(); left != 98 {
			t.Fatalf("the minute's limit after a call the second's refused: %d left, want 98 (the refused call charged)", left)
		}
	}
	if !refused {
		t.Fatal("three times, the per-second limit did not refuse a second call")
	}
	// The minute's limit refuses: the second's charge is given back.
	ask(t, c, desc("min1=c"))
	if got := ask(t, c, desc("sec=c"), desc("min1=c")).GetOverallCode(); got != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("min1 spent: %v", got)
	}
	if got := ask(t, c, desc("sec=c")).GetOverallCode(); got != rlsv3.RateLimitResponse_OK {
		t.Fatalf("the second's limit after a call the minute's refused: %v (the refused call charged it)", got)
	}
}

// TestRedisSettings: REDIS_AUTH (a password, or user:password),
// CACHE_KEY_PREFIX, a redis:// URL and SENTINEL's URL form reach Redis.
func TestRedisSettings(t *testing.T) {
	t.Parallel()
	const rules = "domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n"
	check := func(t *testing.T, env map[string]string, srv *redistest.Server, password, prefix string) {
		t.Helper()
		dir := t.TempDir()
		write(t, dir, "d.yaml", rules)
		r := launch(t, env, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
		c := dial(t, r.addrs.grpc, nil)
		waitFor(t, "SERVING once Redis answers", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
		for i, want := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
			if got := ask(t, c, desc("user=a")).GetOverallCode(); got != want {
				t.Fatalf("call %d: %v, want %v\n%s", i, got, want, r.out)
			}
		}
		ks := allKeys(t, srv, password)
		if len(ks) != 1 || !strings.HasPrefix(ks[0], prefix+"{") {
			t.Fatalf("keys %q, want one starting %q", ks, prefix+"{")
		}
	}
	t.Run("password", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithPassword("s3cret"))
		check(t, map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr(), "REDIS_AUTH": "s3cret"}, srv, "s3cret", "floodgate:")
	})
	t.Run("user and password, prefix", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithPassword("other"), redistest.WithConfig("user alice on >wonder ~* &* +@all"))
		env := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr(), "REDIS_AUTH": "alice:wonder", "CACHE_KEY_PREFIX": "rl_"}
		dir := t.TempDir()
		write(t, dir, "d.yaml", rules)
		r := launch(t, env, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "")
		c := dial(t, r.addrs.grpc, nil)
		waitFor(t, "SERVING once Redis answers", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
		ask(t, c, desc("user=a"))
		a := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "alice", Password: "wonder"})
		defer a.Close()
		ks, err := a.Keys(context.Background(), "*").Result()
		if err != nil || len(ks) != 1 || !strings.HasPrefix(ks[0], "rl_{") {
			t.Fatalf("keys %q %v, want one starting rl_{", ks, err)
		}
	})
	t.Run("redis:// URL", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithPassword("s3cret"))
		check(t, map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis://:s3cret@" + srv.Addr()}, srv, "s3cret", "floodgate:")
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, redistest.WithMasters(1))
		check(t, map[string]string{"REDIS_TYPE": "CLUSTER", "REDIS_URL": strings.Join(cl.Addrs(), ",")}, cl.Nodes()[0], "", "floodgate:")
	})
	t.Run("unix socket", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(t.TempDir(), "redis.sock")
		srv := redistest.Start(t, redistest.WithConfig("unixsocket "+sock, "unixsocketperm 700"))
		check(t, map[string]string{"REDIS_SOCKET_TYPE": "unix", "REDIS_URL": sock}, srv, "", "floodgate:")
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		g := redistest.StartSentinel(t)
		check(t, map[string]string{"REDIS_TYPE": "SENTINEL", "REDIS_URL": g.MasterName() + "," + strings.Join(g.SentinelAddrs(), ",")}, g.Master(), "", "floodgate:")
	})
}

// TestRedisTLS: REDIS_TLS with REDIS_TLS_CACERT and a client certificate
// (REDIS_TLS_CLIENT_CERT, _KEY) reaches a Redis that requires both.
func TestRedisTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	serverCert, serverKey := ca.Issue(t, dir, "redis", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	clientCert, clientKey := ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth, "client.test")
	port := freePort(t)
	srv := redistest.Start(t, redistest.WithConfig(
		fmt.Sprintf("tls-port %d", port), "tls-cert-file "+serverCert, "tls-key-file "+serverKey,
		"tls-ca-cert-file "+ca.File, "tls-auth-clients yes"))
	tlsAddr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	base := map[string]string{"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": tlsAddr, "REDIS_TLS": "true", "REDIS_TLS_CACERT": ca.File,
		"REDIS_TLS_CLIENT_CERT": clientCert, "REDIS_TLS_CLIENT_KEY": clientKey}
	for name, env := range map[string]map[string]string{
		"verified":             base,
		"hostname not checked": merged(base, map[string]string{"REDIS_URL": "localhost:" + fmt.Sprint(port), "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION": "true"}),
	} {
		t.Run(name, func(t *testing.T) {
			dirc := t.TempDir()
			write(t, dirc, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "1"))
			r := launch(t, env, "-config", dirc, "-grpc", "127.0.0.1:0", "-http", "")
			c := dial(t, r.addrs.grpc, nil)
			waitFor(t, "SERVING once Redis answers over TLS", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
			if got := ask(t, c, desc("user="+name)).GetOverallCode(); got != rlsv3.RateLimitResponse_OK {
				t.Fatalf("over TLS: %v\n%s", got, r.out)
			}
		})
	}
	if ks := allKeys(t, srv, ""); len(ks) != 2 {
		t.Fatalf("keys %q, want the two calls'", ks)
	}
}

// freePort is a TCP port of 127.0.0.1 no one listens on (for a moment).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestRedisHealth: a Redis that does not answer at start keeps the
// service NOT_SERVING, logged, until it does; with
// REDIS_HEALTH_CHECK_ACTIVE_CONNECTION health follows Redis after.
func TestRedisHealth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "5"))
	srv := redistest.Start(t)
	srv.Kill()
	r := launch(t, map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": srv.Addr(), "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION": "true",
		"REDIS_STARTUP_INITIAL_INTERVAL": "50ms", "REDIS_STARTUP_MAX_INTERVAL": "100ms",
	}, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0")
	c := dial(t, r.addrs.grpc, nil)
	if st := healthOf(t, c, "ratelimit"); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health with Redis down at start: %v", st)
	}
	if code := status(t, "http://"+r.addrs.http+"/healthcheck"); code != 500 {
		t.Fatalf("/healthcheck with Redis down: %d", code)
	}
	waitFor(t, "the log says Redis does not answer", func() bool { return strings.Contains(r.out.String(), "Redis does not answer; trying again") })
	srv.Restart()
	waitFor(t, "SERVING once Redis answers", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
	srv.Kill()
	waitFor(t, "NOT_SERVING when Redis goes", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_NOT_SERVING })
	srv.Restart()
	waitFor(t, "SERVING when Redis is back", func() bool { return healthOf(t, c, "ratelimit") == healthpb.HealthCheckResponse_SERVING })
}

// TestRedisStartupGivesUp: with REDIS_STARTUP_MAX_ELAPSED_TIME, a Redis
// that does not answer in that time stops the service, as upstream's.
func TestRedisStartupGivesUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "d.yaml", strings.ReplaceAll(perMinute, "%N%", "5"))
	out := &coretest.Buffer{}
	err := run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, envOf(map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:1", "REDIS_STARTUP_INITIAL_INTERVAL": "10ms", "REDIS_STARTUP_MAX_ELAPSED_TIME": "50ms",
	}), out, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer within REDIS_STARTUP_MAX_ELAPSED_TIME (50ms)") {
		t.Fatalf("run: %v", err)
	}
}

// TestRedisClientOptions: the pool size, the timeout, credentials, the
// database and TLS reach the go-redis client.
func TestRedisClientOptions(t *testing.T) {
	var out strings.Builder
	s, err := parse(nil, &out, envOf(map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis://127.0.0.1:6390/3", "REDIS_AUTH": "alice:wonder",
		"REDIS_POOL_SIZE": "17", "REDIS_TIMEOUT": "750ms", "REDIS_TLS": "true",
	}))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, out.String())
	}
	c := s.redis.client()
	defer c.Close()
	o := c.(*redis.Client).Options()
	if o.Addr != "127.0.0.1:6390" || o.Network != "tcp" || o.DB != 3 || o.Username != "alice" || o.Password != "wonder" ||
		o.PoolSize != 17 || o.DialTimeout != 750*time.Millisecond || o.TLSConfig == nil || !o.ContextTimeoutEnabled {
		t.Fatalf("options: %+v", o)
	}
	if got := len(s.redis.options(s.store)); got != 1 {
		t.Fatalf("%d redisstore options, want 1 (the timeout)", got)
	}
}
