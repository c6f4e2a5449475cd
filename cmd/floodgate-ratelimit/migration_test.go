package main

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/internal/redistest"
)

// The migration test starts the service as envoyproxy/ratelimit's
// docker-compose files start theirs: the environment of
// integration-test/docker-compose-integration-test.yml (the example's,
// docker-compose-example.yml, plus RESPONSE_DYNAMIC_METADATA=true) and
// examples/ratelimit/config, copied as they are into
// testdata/upstream-example/ratelimit/config. Only the addresses change:
// the compose network's host names (redis, statsd) become this test's
// servers on loopback, RUNTIME_ROOT the testdata directory, and the
// listeners' ports free ones. Then it replays upstream's
// integration-test/scripts: each curl through Envoy becomes the
// descriptors Envoy sends for it under examples/envoy/proxy.yaml's
// rate_limits (a request_headers action whose header is missing drops
// its whole descriptor), and each assert the decision it checks.

// composeEnv is the integration test's environment for the ratelimit
// service, with redis and statsd at the given addresses.
func composeEnv(redisAddr, statsdHost, statsdPort, root string) map[string]string {
	return map[string]string{
		"USE_STATSD": "true", "STATSD_HOST": statsdHost, "STATSD_PORT": statsdPort,
		"LOG_LEVEL": "debug", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": redisAddr,
		"RUNTIME_ROOT": root, "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_WATCH_ROOT": "false",
		"RESPONSE_DYNAMIC_METADATA": "true",
	}
}

// step is one request of a script: its descriptors and the decision the
// script asserts.
type step struct {
	descs []*rlcommon.RateLimitDescriptor
	want  rlsv3.RateLimitResponse_Code
	// metadata, when set, is the service_with_quota name Envoy reads from
	// the response's dynamic_metadata to pick the backend.
	metadata string
}

// hits is a descriptor with its own hits_addend (a rate_limits entry's
// hits_addend).
func hits(n uint64, kvs ...string) *rlcommon.RateLimitDescriptor {
	d := desc(kvs...)
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// repeat is n calls of the same descriptors with the same decision.
func repeat(n int, want rlsv3.RateLimitResponse_Code, descs ...*rlcommon.RateLimitDescriptor) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{descs: descs, want: want}
	}
	return out
}

func seq(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)

// upstreamScripts are integration-test/scripts/*.sh. Envoy's routes:
// /twoheader sends (foo, bar) and (foo, baz); /fourheader (foo, bar) and
// (source_cluster, destination_cluster); /fiveheader those and
// (category); /unspec (unspec); /quota (service=service_1) and
// (service=service_2); /tokenquota (service=service_2) with hits_addend
// 0 on the request and 1 when the stream is done.
var upstreamScripts = []struct {
	script string
	calls  []step
	// differs names the documented difference (docs/envoy.md) that
	// makes floodgate decide a step otherwise; its calls then hold
	// floodgate's decisions.
	differs string
	// upstream, when set, holds upstream's decisions, which the script
	// gets under upstream's charging: with
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT set, false (upstream's
	// default) and true.
	upstream []step
}{
	{script: "simple-get.sh", calls: repeat(1, ok, desc("foo=test", "baz=shady"))},
	{script: "trigger-ratelimit.sh", calls: seq(
		repeat(3, ok, desc("foo=pelle", "baz=not-so-shady")),
		repeat(2, over, desc("foo=pelle", "baz=not-so-shady")))},
	{script: "trigger-shadow-mode-key.sh", calls: repeat(6, ok, desc("foo=pelle", "baz=shady"))},
	{script: "value-included-in-stats-key-when-unspecified.sh", calls: seq(
		repeat(2, ok, desc("unspec=unspecified_value")),
		repeat(1, over, desc("unspec=unspecified_value")))},
	{script: "replaces.sh", calls: seq(
		repeat(1, over, desc("foo=bkthomps", "bar=banned")),
		repeat(1, over, desc("foo=bkthomps", "bar=banned"), desc("source_cluster=proxy", "destination_cluster=mock")),
		repeat(2, ok, desc("foo=bkthomps", "bar=banned"), desc("source_cluster=proxy", "destination_cluster=override")),
		repeat(1, over, desc("foo=bkthomps", "bar=banned"), desc("source_cluster=proxy", "destination_cluster=override")),
		repeat(2, ok, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=bkthomps")),
		repeat(1, over, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=bkthomps")),
		repeat(1, ok, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=not_bkthomps")),
		repeat(1, over, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=not_bkthomps")),
		repeat(1, over, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=bkthomps")),
		repeat(4, ok, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=fake"), desc("category=account")),
		repeat(1, over, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=fake"), desc("category=account")),
		repeat(1, ok, desc("foo=foo_2", "bar=bkthomps")),
		repeat(1, over, desc("foo=foo_2", "bar=bkthomps")),
		repeat(2, ok, desc("foo=foo_3", "bar=bar_3"), desc("source_cluster=proxy", "destination_cluster=fake")),
		repeat(1, over, desc("foo=foo_3", "bar=bar_3"), desc("source_cluster=proxy", "destination_cluster=fake")),
		repeat(1, over, desc("foo=my_foo", "bar=bkthomps"), desc("source_cluster=proxy", "destination_cluster=fake"), desc("category=account")))},
	// The script asserts the first two; the third is refused by both
	// quota rules (service_1 1 a minute, service_2 2 a minute).
	{script: "quota.sh", calls: seq(
		repeat(2, ok, desc("service=service_1"), desc("service=service_2")),
		repeat(1, over, desc("service=service_1"), desc("service=service_2")))},
	// Upstream: checks 1 to 3 pass (a check is refused once the count is
	// past the quota of 2; the debits take it to 3, the last one over the
	// quota), the 4th is refused. floodgate's default refuses a check
	// once nothing is left: the 3rd.
	{script: "token-quota.sh", differs: "hits_addend: 0", calls: []step{
		tokenCheck(ok, "", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "", "service_2"), debit(ok, "service_2"),
		tokenCheck(over, "", "service_2"),
	}, upstream: []step{
		tokenCheck(ok, "", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "", "service_2"), debit(over, "service_2"),
		tokenCheck(over, "", "service_2"),
	}},
	// Upstream: requests 1-2 go to service_1 (quota 1), 3-5 to service_2
	// (quota 2), the 6th is refused: each check passes until its count
	// is past the quota. floodgate's default: one request per service
	// fewer.
	{script: "multiservice-tokenquota.sh", differs: "hits_addend: 0", calls: []step{
		tokenCheck(ok, "service_1", "service_1", "service_2"), debit(ok, "service_1"),
		tokenCheck(ok, "service_2", "service_1", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "service_2", "service_1", "service_2"), debit(ok, "service_2"),
		tokenCheck(over, "", "service_1", "service_2"),
	}, upstream: []step{
		tokenCheck(ok, "service_1", "service_1", "service_2"), debit(ok, "service_1"),
		tokenCheck(ok, "service_1", "service_1", "service_2"), debit(over, "service_1"),
		tokenCheck(ok, "service_2", "service_1", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "service_2", "service_1", "service_2"), debit(ok, "service_2"),
		tokenCheck(ok, "service_2", "service_1", "service_2"), debit(over, "service_2"),
		tokenCheck(over, "", "service_1", "service_2"),
	}},
}

// tokenCheck is the call Envoy makes as a /tokenquota or
// /multiservice-tokenquota request arrives: hits_addend 0 on each of
// services, routed to the service named by metadata ("": not checked).
func tokenCheck(want rlsv3.RateLimitResponse_Code, metadata string, services ...string) step {
	s := step{want: want, metadata: metadata}
	for _, v := range services {
		s.descs = append(s.descs, hits(0, "service="+v))
	}
	return s
}

// debit is the call Envoy makes once the request's stream is done: 1 hit
// on the service it went to (Envoy ignores the answer; the script's
// service asserts it).
func debit(want rlsv3.RateLimitResponse_Code, service string) step {
	return step{descs: d(hits(1, "service="+service)), want: want}
}

func d(ds ...*rlcommon.RateLimitDescriptor) []*rlcommon.RateLimitDescriptor { return ds }

// TestMigration: upstream's integration environment and configuration
// start the service unchanged, on Redis, and its scripts get upstream's
// decisions, but where docs/envoy.md lists a difference; the counters go
// to statsd under upstream's names.
func TestMigration(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sd := listenStatsd(t)
	host, port, _ := net.SplitHostPort(sd.addr())
	root, err := filepath.Abs("testdata/upstream-example")
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	for _, sc := range upstreamScripts {
		env := composeEnv(srv.Addr(), host, port, root)
		t.Run(sc.script, func(t *testing.T) { runScript(t, rc, env, sc.calls) })
		if sc.upstream == nil {
			continue
		}
		for _, stop := range []string{"false", "true"} {
			env := composeEnv(srv.Addr(), host, port, root)
			env["STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"] = stop
			t.Run(sc.script+" STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT="+stop, func(t *testing.T) { runScript(t, rc, env, sc.upstream) })
		}
	}
	// The statsd counters of the detailed_metric rule carry the value.
	sd.waitFor(t, "ratelimit.service.rate_limit.rl.unspec_unspecified_value.over_limit:1|c")
	sd.waitFor(t, "ratelimit.service.rate_limit.rl.foo.baz_shady.shadow_mode:3|c")
}

// runScript starts the service with env, on empty counters, and checks
// that calls get their decisions.
func runScript(t *testing.T, rc *redis.Client, env map[string]string, calls []step) {
	// Each script starts from empty counters, as upstream's run-all.sh
	// leaves them a minute apart.
	if err := rc.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	r := launch(t, env, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0")
	if strings.Contains(r.out.String(), "level=ERROR") {
		t.Fatalf("errors at start:\n%s", r.out)
	}
	client := rlsv3.NewRateLimitServiceClient(dial(t, r.addrs.grpc, nil))
	clearOfMinute(t)
	for j, c := range calls {
		resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: c.descs})
		if err != nil {
			t.Fatalf("step %d: %v", j+1, err)
		}
		if resp.GetOverallCode() != c.want {
			t.Fatalf("step %d: %v, want %v (%s)", j+1, resp.GetOverallCode(), c.want, resp)
		}
		if c.metadata != "" {
			name := resp.GetDynamicMetadata().GetFields()["metadata"].GetStructValue().GetFields()["service_with_quota"].GetStructValue().GetFields()["name"].GetStringValue()
			if name != c.metadata {
				t.Fatalf("step %d: routed to %q, want %q (%s)", j+1, name, c.metadata, resp.GetDynamicMetadata())
			}
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// clearOfMinute waits, at most two seconds, until the wall clock is not
// in the last two seconds of a minute: the scripts' limits are per minute,
// and a window that turned mid-script would give them a fresh count.
func clearOfMinute(t *testing.T) {
	t.Helper()
	if s := time.Now().Second(); s >= 58 {
		time.Sleep(time.Duration(60-s) * time.Second)
	}
}

// statsdServer collects the lines statsd clients send it over TCP.
type statsdServer struct {
	l     net.Listener
	mu    sync.Mutex
	lines []string
}

func listenStatsd(t *testing.T) *statsdServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &statsdServer{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					s.mu.Lock()
					s.lines = append(s.lines, sc.Text())
					s.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return s
}

func (s *statsdServer) addr() string { return s.l.Addr().String() }

func (s *statsdServer) waitFor(t *testing.T, line string) {
	t.Helper()
	waitFor(t, "statsd line "+line, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, l := range s.lines {
			if l == line {
				return true
			}
		}
		return false
	})
}
