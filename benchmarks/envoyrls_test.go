package benchmarks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/redistest"
)

const (
	// rlsDomain is the configuration's one domain.
	rlsDomain = "bench"
	// rlsLimit is every benchmark descriptor's requests_per_unit, a
	// second: so high that every request is admitted and both services do
	// the same work on every call (read and count each descriptor's
	// window in Redis).
	rlsLimit = 1_000_000_000
	// rlsValues distinct descriptor values are cycled through, so that
	// requests spread over keys: a request's descriptors all carry the
	// same value, under their own keys.
	rlsValues = 4096
	// rlsProbeLimit is the probe descriptor's limit, an hour: a fresh
	// value is admitted that many times, then refused.
	rlsProbeLimit = 5
	// rlsBadShare: more than one call in rlsBadShare failing, or refused,
	// fails the row.
	rlsBadShare = 1000
)

// rlsKeys are the configuration's three descriptor keys, each with its
// own rate_limit; a d1 request names the first, a d3 request all three.
var rlsKeys = []string{"k1", "k2", "k3"}

// rlsConfig is the one configuration file both services load, in
// envoyproxy/ratelimit's format.
var rlsConfig = func() string {
	s := "domain: " + rlsDomain + "\ndescriptors:\n"
	for _, k := range rlsKeys {
		s += fmt.Sprintf("  - key: %s\n    rate_limit:\n      unit: second\n      requests_per_unit: %d\n", k, rlsLimit)
	}
	return s + fmt.Sprintf("  - key: probe\n    rate_limit:\n      unit: hour\n      requests_per_unit: %d\n", rlsProbeLimit)
}()

// rlsRequest is a request of d descriptors (1 or 3), each the value under
// its key.
func rlsRequest(value string, d int) *rlsv3.RateLimitRequest {
	req := &rlsv3.RateLimitRequest{Domain: rlsDomain}
	for _, k := range rlsKeys[:d] {
		req.Descriptors = append(req.Descriptors, &rlcommon.RateLimitDescriptor{
			Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: value}},
		})
	}
	return req
}

// rlsRun numbers the timed loops of one test binary, so that each loop's
// descriptor values, and so its Redis keys, are fresh.
var rlsRun atomic.Int64

// rlsBench is one run of the services: one redis-server, and both
// services on it.
type rlsBench struct {
	redis *redis.Client
	procs []*rlsProc // floodgate, envoyproxy: the order of the rows
}

// startRLSBench starts a redis-server, builds both services and starts
// them on it with the benchmark's configuration. It skips tb without
// redis-server or when a service cannot be built for want of a module.
func startRLSBench(tb testing.TB) *rlsBench {
	tb.Helper()
	srv := redistest.Start(tb)
	dir := tb.TempDir()
	floodgateBin := buildFloodgateRLS(tb, dir)
	envoyBin := buildEnvoyRLS(tb, dir)
	conf := filepath.Join(dir, "runtime", "ratelimit", "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "bench.yaml"), []byte(rlsConfig), 0o644); err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { c.Close() })
	rb := &rlsBench{redis: c, procs: []*rlsProc{startFloodgateRLS(tb, "floodgate", dir, floodgateBin, srv.Addr(), conf)}}
	if os.Getenv("FLOODGATE_RLS_BENCH_SCRIPT") != "" {
		// The script's fixed windows (the default before client-clock
		// windows) beside them, for a before/after in one run.
		rb.procs = append(rb.procs, startFloodgateRLS(tb, "floodgate-script", dir, floodgateBin, srv.Addr(), conf, "-client-clock-windows", "false"))
	}
	if os.Getenv("FLOODGATE_RLS_BENCH_LOCAL_QUOTA") != "" {
		// Local quota on every rule (on the script's counts).
		lq := startFloodgateRLS(tb, "floodgate-lq", dir, floodgateBin, srv.Addr(), conf, "-local-quota")
		lq.leases = true
		rb.procs = append(rb.procs, lq)
	}
	rb.procs = append(rb.procs, startEnvoyRLS(tb, dir, envoyBin, srv.Addr(), filepath.Join(dir, "runtime")))
	return rb
}

// probeRLS checks, before anything is timed, that p counts in Redis under
// the configuration written: a fresh probe value is admitted
// rlsProbeLimit times, then refused; and a d-descriptor request is
// answered with the benchmark's limit on each descriptor.
func probeRLS(tb testing.TB, p *rlsProc, run int64, d int) {
	tb.Helper()
	ctx := context.Background()
	resp, err := p.client.ShouldRateLimit(ctx, rlsRequest("probe-"+strconv.FormatInt(run, 10), d))
	if err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	if err := answersLimit(resp, d); err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	// An hour's window may turn between two calls: then try a fresh value.
	var got []rlsv3.RateLimitResponse_Code
	for attempt := range 3 {
		req := &rlsv3.RateLimitRequest{Domain: rlsDomain, Descriptors: []*rlcommon.RateLimitDescriptor{{
			Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "probe", Value: fmt.Sprintf("r%d-%d", run, attempt)}},
		}}}
		got = got[:0]
		for range rlsProbeLimit + 1 {
			resp, err := p.client.ShouldRateLimit(ctx, req)
			if err != nil {
				tb.Fatalf("%s: probe: %v", p.name, err)
			}
			got = append(got, resp.GetOverallCode())
		}
		ok := true
		for i, code := range got {
			want := rlsv3.RateLimitResponse_OK
			if i == rlsProbeLimit {
				want = rlsv3.RateLimitResponse_OVER_LIMIT
			}
			ok = ok && code == want
		}
		if ok {
			return
		}
	}
	tb.Fatalf("%s: %d calls on a fresh probe value (limit %d an hour) answered %v", p.name, rlsProbeLimit+1, rlsProbeLimit, got)
}

// rlsTally is what a timed loop's calls answered.
type rlsTally struct {
	failed, over atomic.Int64
	lastErr      atomic.Pointer[error]
	mu           sync.Mutex
	lat          []time.Duration
}

// rlsCall is one call of a row: ok false is a refusal (OVER_LIMIT), or
// for the health row, anything but SERVING.
type rlsCall func(ctx context.Context, i int64) (ok bool, err error)

// call makes one timed call and returns its latency.
func (t *rlsTally) call(ctx context.Context, do rlsCall, i int64) time.Duration {
	start := time.Now()
	ok, err := do(ctx, i)
	took := time.Since(start)
	switch {
	case err != nil:
		t.failed.Add(1)
		t.lastErr.Store(&err)
	case !ok:
		t.over.Add(1)
	}
	return took
}

// decide is a row's call: ShouldRateLimit with reqs[i % len(reqs)], each
// of d descriptors, or, with seq, reqs[seq[i % len(seq)]].
func decide(c rlsv3.RateLimitServiceClient, reqs []*rlsv3.RateLimitRequest, d int, seq []uint32) rlsCall {
	return func(ctx context.Context, i int64) (bool, error) {
		req := reqs[i%int64(len(reqs))]
		if seq != nil {
			req = reqs[seq[i%int64(len(seq))]]
		}
		resp, err := c.ShouldRateLimit(ctx, req)
		if err != nil {
			return false, err
		}
		if len(resp.GetStatuses()) != d {
			return false, fmt.Errorf("%d statuses for %d descriptors", len(resp.GetStatuses()), d)
		}
		return resp.GetOverallCode() == rlsv3.RateLimitResponse_OK, nil
	}
}

// healthCheck is the baseline rows' call: the gRPC health service's
// Check of the whole server, answered without Redis.
func healthCheck(c healthpb.HealthClient) rlsCall {
	req := &healthpb.HealthCheckRequest{}
	return func(ctx context.Context, _ int64) (bool, error) {
		resp, err := c.Check(ctx, req)
		return resp.GetStatus() == healthpb.HealthCheckResponse_SERVING, err
	}
}

func (t *rlsTally) keep(lat []time.Duration) {
	t.mu.Lock()
	t.lat = append(t.lat, lat...)
	t.mu.Unlock()
}

// quantile returns the q quantile of sorted latencies, in µs.
func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Microsecond)
}

// BenchmarkEnvoyRLS measures Envoy's rate-limit service (ShouldRateLimit
// over gRPC on 127.0.0.1) in floodgate's cmd/floodgate-ratelimit and in
// envoyproxy/ratelimit, each a process of its own built here, both on one
// redis-server started here, with one configuration (one domain, three
// descriptor keys of 10⁹ a second each, so every request is admitted):
// d1 and d3 name one and three descriptors per request, c1, c16 and c64
// are the concurrent callers on one gRPC connection. It reports
// decisions/s (answered requests a second), the median and 99th
// percentile call in µs, the CPU time per request of the service, of
// redis-server and of this process, the load generator
// (client-cpu-µs/op), the machine's idle share during the loop (idle-%),
// the service's resident memory after the loop (rss-MiB), and the
// commands Redis ran per request. Skipped without redis-server,
// or when a service cannot be built because a module cannot be fetched.
func BenchmarkEnvoyRLS(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []int{16, 64} {
		if c%procs != 0 {
			b.Skipf("GOMAXPROCS=%d does not divide %d callers; run with -cpu 2 (or 1, 4, ...)", procs, c)
		}
	}
	rb := startRLSBench(b)
	// The services' rows alternate, so that what else this shared
	// machine runs meanwhile falls on all alike.
	for _, d := range []int{0, 1, 3} {
		for _, c := range []int{1, 16, 64} {
			if d == 0 && c == 16 {
				continue
			}
			for _, p := range rb.procs {
				name := fmt.Sprintf("%s/d%d/c%d", p.name, d, c)
				if d == 0 {
					name = fmt.Sprintf("%s/health/c%d", p.name, c)
				}
				b.Run(name, func(b *testing.B) { rb.measure(b, p, d, c, false) })
			}
		}
	}
	// The hot mix: three descriptors of one value drawn from a Zipf
	// distribution (s = 1.1) over the same values.
	for _, p := range rb.procs {
		b.Run(p.name+"/z3/c64", func(b *testing.B) { rb.measure(b, p, 3, 64, true) })
	}
}

// measure runs one row: b.N requests of d descriptors from c callers, the
// values in turn or, with zipf, drawn from benchwork.Zipf; d = 0 is the
// health baseline.
func (rb *rlsBench) measure(b *testing.B, p *rlsProc, d, c int, zipf bool) {
	p.exitedEarly(b)
	run := rlsRun.Add(1)
	flush(b, rb.redis)
	do := healthCheck(healthpb.NewHealthClient(p.conn))
	if d > 0 {
		probeRLS(b, p, run, d)
		reqs := make([]*rlsv3.RateLimitRequest, rlsValues)
		for i := range reqs {
			reqs[i] = rlsRequest(fmt.Sprintf("r%d-%d", run, i), d)
		}
		var seq []uint32
		if zipf {
			seq = benchwork.Zipf(rlsValues)
		}
		do = decide(p.client, reqs, d, seq)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var t rlsTally
	before, keys0 := readStats(b, rb.redis), dbSize(b, rb.redis)
	rcpu0 := redisCPU(b, rb.redis)
	cpu0, cpuOK := p.cpuTime()
	self0, idle0 := selfCPU(), machineTicks()
	b.ResetTimer()
	if c == 1 {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			lat = append(lat, t.call(ctx, do, int64(i)))
		}
		t.keep(lat)
	} else {
		var next, started atomic.Int64
		b.SetParallelism(c / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			started.Add(1)
			lat := make([]time.Duration, 0, 1024)
			for pb.Next() {
				lat = append(lat, t.call(ctx, do, next.Add(1)-1))
			}
			t.keep(lat)
		})
		if n := started.Load(); n != int64(c) {
			b.Fatalf("%d callers ran, want %d", n, c)
		}
	}
	b.StopTimer()
	self1, idle1 := selfCPU(), machineTicks()
	cpu1, _ := p.cpuTime()
	rcpu1 := redisCPU(b, rb.redis)
	p.exitedEarly(b)
	values := min(b.N, rlsValues) // distinct values named
	if zipf {
		seen := map[uint32]bool{}
		for _, v := range benchwork.Zipf(rlsValues)[:min(b.N, benchwork.SeqLen)] {
			seen[v] = true
		}
		values = len(seen)
	}
	rb.check(b, p, &t, d, values, before, keys0)

	slices.Sort(t.lat)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(quantile(t.lat, 0.50), "p50-µs")
	b.ReportMetric(quantile(t.lat, 0.99), "p99-µs")
	if cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
	b.ReportMetric(float64(rcpu1-rcpu0)/float64(time.Microsecond)/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric(float64(self1-self0)/float64(time.Microsecond)/float64(b.N), "client-cpu-µs/op")
	if mib, ok := p.rss(); ok {
		b.ReportMetric(mib, "rss-MiB")
	}
	if idle0.total > 0 && idle1.total > idle0.total {
		b.ReportMetric(100*float64(idle1.idle-idle0.idle)/float64(idle1.total-idle0.total), "idle-%")
	}
}

// redisCPU returns the CPU time redis-server has used (INFO cpu: its
// main thread and the others, user and system).
func redisCPU(tb testing.TB, c *redis.Client) time.Duration {
	tb.Helper()
	reply, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	info := redistest.ParseInfo(reply)
	sum := info.Float(tb, "used_cpu_sys") + info.Float(tb, "used_cpu_user")
	return time.Duration(sum * float64(time.Second))
}

// check fails b when the calls or Redis show that the loop did not
// measure the service counting in Redis: a call in rlsBadShare failed or
// was refused, Redis ran fewer commands than requests, or fewer keys were
// made than distinct descriptors were named. It reports errors/op,
// over/op and redis-cmds/op.
func (rb *rlsBench) check(b *testing.B, p *rlsProc, t *rlsTally, d, values int, before serverStats, keys0 int64) {
	b.Helper()
	after := readStats(b, rb.redis)
	keys := dbSize(b, rb.redis)
	cmds := after.cmds - before.cmds - infoReads - 3 // a DBSIZE, two INFO cpu
	failed, over := t.failed.Load(), t.over.Load()
	b.ReportMetric(float64(failed)/float64(b.N), "errors/op")
	b.ReportMetric(float64(over)/float64(b.N), "over/op")
	b.ReportMetric(float64(cmds)/float64(b.N), "redis-cmds/op")
	if failed*rlsBadShare > int64(b.N) {
		err := t.lastErr.Load()
		b.Fatalf("%s: %d of %d calls failed (last: %v)", p.name, failed, b.N, *err)
	}
	if over*rlsBadShare > int64(b.N) {
		b.Fatalf("%s: %d of %d calls refused (or not SERVING); every request is under %d a second", p.name, over, b.N, rlsLimit)
	}
	if len(t.lat) != b.N {
		b.Fatalf("%d latencies for %d calls", len(t.lat), b.N)
	}
	if d == 0 {
		if keys != keys0 {
			b.Fatalf("%s: %d keys in Redis after health checks, %d before", p.name, keys, keys0)
		}
		return
	}
	if cmds < int64(b.N) && !p.leases {
		b.Fatalf("%s: Redis ran %d commands for %d requests", p.name, cmds, b.N)
	}
	// Each distinct descriptor named makes a key at least (envoyproxy makes
	// one a window): in Redis now, or expired since.
	want := int64(d * values)
	if made := keys - keys0 + after.expired - before.expired; made < want {
		b.Fatalf("%s: %d keys made in Redis (%d there, %d expired) for %d distinct descriptors", p.name, made, keys, after.expired-before.expired, want)
	}
}

// TestEnvoyRLSSetup checks what BenchmarkEnvoyRLS runs on: both services
// build, start on one redis-server, answer one and three descriptors
// with the configured limit, and refuse a probe value past its limit.
// It builds both (seconds once the build cache has them; -short skips it).
func TestEnvoyRLSSetup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts both rate-limit services")
	}
	rb := startRLSBench(t)
	for _, p := range rb.procs {
		for _, d := range []int{1, 3} {
			probeRLS(t, p, rlsRun.Add(1), d)
		}
	}
}
