package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/internal/redistest"
)

// The fleet test (issue 31): 3 processes of the service, each this test
// binary run again as the command (TestFleetProc), share one redis-server
// with -local-quota. 48 callers send requests of three descriptors, each
// value drawn from a Zipf mix (s = 1.1) over 64 values, for 1.5 s; every
// admitted request is logged with the wall clock before it was sent (s)
// and after its answer (r). All the processes and redis-server run on
// this machine: one clock.

const (
	fleetProcEnv = "FLOODGATE_RLS_FLEET_PROC" // the worker's arguments, as JSON
	fleetProcs   = 3
	fleetCallers = 48
	fleetValues  = 64
	fleetRun     = 1500 * time.Millisecond
	fleetLimit   = 100                    // per second, each rule
	fleetLease   = 100 * time.Millisecond // a tenth of the period: the lease's length
)

// fleetConfig: a fixed window (a), GCRA (b) and a fixed window again (c),
// each 100 a second, for every value.
const fleetConfig = `domain: fleet
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 100, algorithm: gcra}
  - key: c
    rate_limit: {unit: second, requests_per_unit: 100}
`

// TestFleetProc is the command, run by TestFleetLocalQuota in a process of
// its own; run on its own, it skips.
func TestFleetProc(t *testing.T) {
	raw := os.Getenv(fleetProcEnv)
	if raw == "" {
		t.Skip("a process of TestFleetLocalQuota, which starts it")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	env := func(string) (string, bool) { return "", false } // flags only
	err := run(context.Background(), args, env, os.Stderr, func(a addresses) { fmt.Printf("fleet-grpc=%s\n", a.grpc) })
	t.Fatalf("the service ended: %v", err)
}

// fleetAdm is one admitted descriptor: its key (a, b or c) and value, and
// the wall clock before the request was sent and after its answer (ns).
type fleetAdm struct {
	key  string
	s, r int64
}

// TestFleetLocalQuota: no fixed window of a hot descriptor admits more than
// its 100, and no interval more than GCRA's burst and rate over it widened
// by one lease, with 3 processes deciding from leases: 0 windows over.
func TestFleetLocalQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes and runs 1.5 s of load")
	}
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	conf := t.TempDir()
	write(t, conf, "fleet.yaml", fleetConfig)
	var clients []rlsv3.RateLimitServiceClient
	for i := range fleetProcs {
		addr := startFleetProc(t, i, []string{"-grpc", "127.0.0.1:0", "-http", "", "-redis", srv.Addr(), "-config", conf, "-local-quota"})
		clients = append(clients, rlsv3.NewRateLimitServiceClient(dial(t, addr, nil)))
	}
	adm, requests, elapsed, cmds := fleetLoad(t, c, clients)
	t.Logf("%d requests in %v (%.0f a second), %d admitted descriptors; %d Redis commands, %.4f per request",
		requests, elapsed.Round(time.Millisecond), float64(requests)/elapsed.Seconds(), len(adm), cmds, float64(cmds)/float64(requests))
	if requests == 0 {
		t.Fatal("no request answered")
	}
	over := 0
	for v := range 4 { // the hottest values
		over += checkFixed(t, adm, fmt.Sprintf("a=%d", v)) + checkFixed(t, adm, fmt.Sprintf("c=%d", v))
		over += checkGCRA(t, adm, fmt.Sprintf("b=%d", v))
	}
	if over > 0 {
		t.Errorf("%d windows over the bound", over)
	}
}

// startFleetProc starts process i of the fleet with args and returns its
// gRPC address once it listens.
func startFleetProc(t *testing.T, i int, args []string) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetProc$")
	cmd.Env = append(os.Environ(), fleetProcEnv+"="+string(raw))
	logf, err := os.Create(filepath.Join(t.TempDir(), fmt.Sprintf("proc%d.log", i)))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if addr, ok := strings.CutPrefix(lines.Text(), "fleet-grpc="); ok {
			go func() { // keep the pipe drained
				for lines.Scan() {
				}
			}()
			return addr
		}
	}
	b, _ := os.ReadFile(logf.Name())
	t.Fatalf("process %d ended before listening:\n%s", i, b)
	return ""
}

// fleetLoad runs the callers against the clients, in turn, for fleetRun,
// and returns the admitted descriptors, the requests answered, the time
// they took and the Redis commands sent meanwhile.
func fleetLoad(t *testing.T, c *redis.Client, clients []rlsv3.RateLimitServiceClient) ([]fleetAdm, int, time.Duration, int64) {
	var mu sync.Mutex
	var adm []fleetAdm
	requests := 0
	before := commands(t, c)
	start := time.Now()
	stop := start.Add(fleetRun)
	var wg sync.WaitGroup
	for g := range fleetCallers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 31))
			z := rand.NewZipf(rng, 1.1, 1, fleetValues-1)
			client := clients[g%len(clients)]
			var mine []fleetAdm
			n := 0
			for time.Now().Before(stop) {
				vals := [3]string{}
				req := &rlsv3.RateLimitRequest{Domain: "fleet"}
				for j, k := range []string{"a", "b", "c"} {
					vals[j] = fmt.Sprintf("%s=%d", k, z.Uint64())
					req.Descriptors = append(req.Descriptors, &rlcommon.RateLimitDescriptor{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: vals[j][2:]}}})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				s := time.Now().UnixNano()
				resp, err := client.ShouldRateLimit(ctx, req)
				r := time.Now().UnixNano()
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				n++
				if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					for _, v := range vals {
						mine = append(mine, fleetAdm{key: v, s: s, r: r})
					}
				}
			}
			mu.Lock()
			adm, requests = append(adm, mine...), requests+n
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return adm, requests, elapsed, commands(t, c) - before
}

// of returns key's admissions, sorted by r.
func of(adm []fleetAdm, key string) []fleetAdm {
	var out []fleetAdm
	for _, a := range adm {
		if a.key == key {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y fleetAdm) int { return int(x.r - y.r) })
	return out
}

// checkFixed counts key's fixed windows (a second each, on this machine's
// clock, which is the server's) that admitted more than the limit, and
// returns how many did. An admission whose request lay within one window
// happened in it; one that spans a window's turn (its answer carries the
// reset in whole seconds, which cannot place it) is counted in neither,
// and reported.
func checkFixed(t *testing.T, all []fleetAdm, key string) int {
	t.Helper()
	P := int64(time.Second)
	in, spanning := map[int64]int{}, 0
	for _, a := range of(all, key) {
		if a.s/P == a.r/P {
			in[a.s/P]++
		} else {
			spanning++
		}
	}
	over, most := 0, 0
	for w, n := range in {
		most = max(most, n)
		if n > fleetLimit {
			over++
			t.Errorf("%s: window %d admitted %d, limit %d", key, w, n, fleetLimit)
		}
	}
	t.Logf("%s: %d windows, the fullest %d (limit %d); %d admissions spanned a window's turn", key, len(in), most, fleetLimit, spanning)
	return over
}

// checkGCRA counts the intervals between two of key's admissions (from
// the first's s to the last's r) in which more were admitted than GCRA's
// bound with local quota: the burst and the rate over the interval widened
// by one lease length (redisstore's WithLocalQuota), and returns how many.
func checkGCRA(t *testing.T, all []fleetAdm, key string) int {
	t.Helper()
	adm := of(all, key)
	rate := float64(fleetLimit) / float64(time.Second)
	over, worst := 0, 0.0
	for i := range adm {
		least := adm[i].s
		for j := i; j < len(adm); j++ {
			least = min(least, adm[j].s)
			bound := float64(fleetLimit) + rate*float64(adm[j].r-least+int64(fleetLease))
			worst = max(worst, float64(j-i+1)/bound)
			if float64(j-i+1) > bound {
				over++
			}
		}
	}
	t.Logf("%s: %d admissions, the closest interval at %.0f %% of the bound", key, len(adm), 100*worst)
	if over > 0 {
		t.Errorf("%s: %d intervals over the bound", key, over)
	}
	return over
}

var (
	fleetMix       = flag.Bool("fleetmix", false, "TestFleetHotMix: measure the hot mix with local quota on and off")
	fleetMixValues = flag.Int("fleetmix-values", 4096, "TestFleetHotMix: the values the Zipf mix draws from")
	fleetMixRounds = flag.Int("fleetmix-rounds", 6, "TestFleetHotMix: rounds, each a cell with local quota and one without")
)

// fleetMixConfig: three keys, each a fixed window no request reaches, as
// benchmarks' BenchmarkEnvoyRLS configures them.
const fleetMixConfig = `domain: fleet
descriptors:
  - key: k0
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k1
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: k2
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`

// TestFleetHotMix (with -fleetmix) measures the hot mix: 3 processes on
// one redis-server, 64 callers, requests of three descriptors whose value
// (the same for the three, as BenchmarkEnvoyRLS's) is drawn from a Zipf
// mix (s = 1.1) over 4,096 values (-fleetmix-values); Redis commands per request (INFO
// commandstats, the clients' commands) and requests a second, with
// -local-quota and without, in alternating rounds of 3 s.
func TestFleetHotMix(t *testing.T) {
	if !*fleetMix {
		t.Skip("a measurement: run with -fleetmix")
	}
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	conf := t.TempDir()
	write(t, conf, "fleet.yaml", fleetMixConfig)
	for round := range *fleetMixRounds {
		for _, local := range []bool{round%2 == 0, round%2 != 0} { // ABBA
			t.Run(fmt.Sprintf("%d/%v", round, local), func(t *testing.T) {
				args := []string{"-grpc", "127.0.0.1:0", "-http", "", "-redis", srv.Addr(), "-config", conf}
				if local {
					args = append(args, "-local-quota")
				}
				var clients []rlsv3.RateLimitServiceClient
				for i := range fleetProcs {
					clients = append(clients, rlsv3.NewRateLimitServiceClient(dial(t, startFleetProc(t, i, args), nil)))
				}
				n, elapsed, cmds := hotMix(t, c, clients, fmt.Sprint(round, local))
				t.Logf("round %d, local quota %-5v: %6d requests, %6.0f a second; %6d Redis commands, %.4f per request",
					round, local, n, float64(n)/elapsed.Seconds(), cmds, float64(cmds)/float64(n))
			})
		}
	}
}

// hotMix runs 64 callers of the hot mix against clients for 3 s, with
// values of their own (prefixed by run), and returns the requests, the
// time they took and the Redis commands sent meanwhile.
func hotMix(t *testing.T, c *redis.Client, clients []rlsv3.RateLimitServiceClient, run string) (int, time.Duration, int64) {
	var total atomic.Int64
	before := commands(t, c)
	start := time.Now()
	stop := start.Add(3 * time.Second)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			z := rand.NewZipf(rand.New(rand.NewPCG(uint64(g), 7)), 1.1, 1, uint64(*fleetMixValues-1))
			client := clients[g%len(clients)]
			for time.Now().Before(stop) {
				v := run + "-" + strconv.FormatUint(z.Uint64(), 10)
				req := &rlsv3.RateLimitRequest{Domain: "fleet"}
				for _, k := range []string{"k0", "k1", "k2"} {
					req.Descriptors = append(req.Descriptors, &rlcommon.RateLimitDescriptor{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: v}}})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := client.ShouldRateLimit(ctx, req)
				cancel()
				if err != nil {
					t.Error(err)
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	return int(total.Load()), time.Since(start), commands(t, c) - before
}
