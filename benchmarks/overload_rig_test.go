package benchmarks

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"golang.org/x/sys/unix"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// Issue 33's real-server comparison (opt-in, -overloadrig; a few
// minutes): an HTTP server whose handler burns a fixed amount of CPU, in a
// process of its own pinned to one core (GOMAXPROCS 1, taskset), driven
// past its capacity over loopback by an open-loop generator in the test's
// process, pinned to the other core: arrivals at a set rate, Poisson,
// seeded, so that a slow server does not slow the arrivals, as real
// clients do not wait for each other. Each protection runs in a fresh
// server. Per protection and offered load: goodput (answers within the
// SLO, 5 × the unloaded median latency) as a share of the measured
// capacity, the shed share, and the p99 of the answered requests against
// the unloaded p99. It needs a machine with at least 2 cores and nothing
// else running: on a busy one the figures say how busy it was.
//
// The protections: none; a static concurrency limit of 1 (core's
// Concurrency algorithm: one core, a CPU-bound handler); kratos/aegis BBR
// (its defaults: CPU over 800‰ from its own reader, then Little's law);
// failsafe-go's adaptive limiter (its defaults); floodgate's
// overload.Adaptive and overload.BBR (their defaults).
var (
	overloadRig     = flag.Bool("overloadrig", false, "TestOverloadRig: run issue 33's real-server comparison (a minute or two)")
	overloadRigRun  = flag.Duration("overloadrig.run", 4*time.Second, "TestOverloadRig: each run's length; its first quarter is not counted")
	overloadRigWork = flag.Duration("overloadrig.work", 2*time.Millisecond, "TestOverloadRig: the CPU each request burns, on an idle core")
	overloadRigOut  = flag.String("overloadrig.out", "", "TestOverloadRig: also write the table to this file")
	overloadRigLoad = flag.String("overloadrig.loads", "0.8,2,5,10", "TestOverloadRig: the offered loads, in multiples of the capacity")
	overloadRigOnly = flag.String("overloadrig.only", "", "TestOverloadRig: run only the protections whose name contains this")
)

// guard admits a request or sheds it; done reports how an admitted one
// ended (ok: served).
type guard func() (done func(ok bool), admitted bool)

// protection makes a fresh guard per run.
type protection struct {
	name string
	make func() guard
}

var protections = []protection{
	{"none", func() guard {
		return func() (func(bool), bool) { return func(bool) {}, true }
	}},
	{"static", func() guard {
		lim := core.MustNew(core.InFlight(runtime.GOMAXPROCS(0)).WithAlgorithm(core.Concurrency))
		return func() (func(bool), bool) {
			d, err := lim.Allow(context.Background(), "all", 1)
			if err != nil || !d.Allowed {
				return nil, false
			}
			return func(bool) { _ = d.Lease.Release(context.Background()) }, true
		}
	}},
	{"kratos-bbr", func() guard {
		lim := bbr.NewLimiter()
		return func() (func(bool), bool) {
			done, err := lim.Allow()
			if err != nil {
				return nil, false
			}
			return func(bool) { done(ratelimit.DoneInfo{}) }, true
		}
	}},
	{"floodgate-adaptive", func() guard {
		lim, err := overload.NewAdaptive(adaptiveRigConfig)
		if err != nil {
			panic(err)
		}
		return func() (func(bool), bool) {
			tok, ok := lim.Acquire(overload.Normal, 1)
			if !ok {
				return nil, false
			}
			return func(served bool) {
				e := core.EndDone
				if !served {
					e = core.EndDropped
				}
				tok.End(e)
			}, true
		}
	}},
	{"floodgate-bbr", func() guard {
		lim, err := overload.NewBBR(overload.BBRConfig{})
		if err != nil {
			panic(err)
		}
		return func() (func(bool), bool) {
			d, err := lim.Allow(context.Background(), "all", 1)
			if err != nil || !d.Allowed {
				return nil, false
			}
			return func(served bool) {
				e := core.EndDone
				if !served {
					e = core.EndDropped
				}
				_ = d.Lease.End(context.Background(), e)
			}, true
		}
	}},
	{"failsafe-adaptive", func() guard {
		lim := adaptivelimiter.NewBuilder[any]().Build()
		return func() (func(bool), bool) {
			p, ok := lim.TryAcquirePermit()
			if !ok {
				return nil, false
			}
			return func(served bool) {
				if served {
					p.Record()
				} else {
					p.Drop()
				}
			}, true
		}
	}},
}

// adaptiveRigConfig is the rig's overload.Adaptive configuration: its
// defaults.
var adaptiveRigConfig = overload.AdaptiveConfig{}

// rigServer is the server under test: a handler burning iters rounds of
// work behind guard g (nil: none).
type rigServer struct {
	iters int
	g     guard
}

func (s *rigServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.g == nil {
		burn(s.iters)
		return
	}
	done, ok := s.g()
	if !ok {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	burn(s.iters)
	done(r.Context().Err() == nil)
}

// rigServerEnv names, in a server process's environment, its protection
// and the rounds of work per request ("static 1900000").
const rigServerEnv = "FLOODGATE_RIG_SERVER"

// TestOverloadRigServer is the server process of TestOverloadRig: it
// serves on loopback, prints its address, and stops when its stdin ends.
func TestOverloadRigServer(t *testing.T) {
	spec := os.Getenv(rigServerEnv)
	if spec == "" {
		t.Skip("the server process of TestOverloadRig")
	}
	var name string
	s := &rigServer{}
	if _, err := fmt.Sscan(spec, &name, &s.iters); err != nil {
		t.Fatal(err)
	}
	for _, p := range protections {
		if p.name == name && name != "none" {
			s.g = p.make()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("addr %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// startRigServer starts a server process for protection name, pinned to
// CPU 0 when taskset is there, and returns its URL; it stops at cleanup.
func startRigServer(t *testing.T, name string, iters int) string {
	t.Helper()
	args := []string{os.Args[0], "-test.run=^TestOverloadRigServer$", "-test.count=1", "-test.v"}
	if ts, err := exec.LookPath("taskset"); err == nil {
		args = append([]string{ts, "-c", "0"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), rigServerEnv+"="+name+" "+strconv.Itoa(iters), "GOMAXPROCS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "addr "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return "http://" + addr + "/"
		}
	}
	t.Fatalf("the server process printed no address: %v", sc.Err())
	return ""
}

// sink keeps burn's result alive.
var sink atomic.Uint64

// burn runs n rounds of a multiply-add, about 1 ns each, yielding the
// processor every 100,000 (about 100 µs): the requests in flight share
// it, as a server's handlers do when they make calls or allocate. A loop
// that never yields would run each request to its end before the next is
// even read (Go preempts a running goroutine only after 10 ms), so the
// queue would sit in the scheduler, where no limit on requests in flight
// can see it.
func burn(n int) {
	x := uint64(n)
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		if i%100_000 == 99_999 {
			runtime.Gosched()
		}
	}
	sink.Add(x)
}

// calibrate returns the rounds of burn that take d here (the fastest of
// a few tries, the machine being shared).
func calibrate(d time.Duration) int {
	const n = 1 << 20
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		burn(n)
		best = min(best, time.Since(start))
	}
	return int(float64(n) * float64(d) / float64(max(best, 1)))
}

// rigResult is one run: what was offered and what came back, after the
// warm-up quarter.
type rigResult struct {
	offered, good, shed, timedOut, other int
	lat                                  []time.Duration // answered (200) requests
	secs                                 float64
}

func (r *rigResult) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[int(q*float64(len(r.lat)-1))]
}

// drive offers rate requests a second to s for run (Poisson arrivals from
// seed), each with a client timeout of 4 × slo, and counts after the first
// quarter.
func drive(url string, rate float64, run, slo time.Duration, seed uint64) *rigResult {
	client := &http.Client{Timeout: 4 * slo, Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxConnsPerHost: 0}}
	defer client.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(seed, 33))
	res := &rigResult{secs: run.Seconds() * 3 / 4}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	from := start.Add(run / 4)
	next := start
	for next.Before(start.Add(run)) {
		time.Sleep(time.Until(next))
		counted := next.After(from)
		wg.Go(func() {
			t0 := time.Now()
			resp, err := client.Get(url)
			took := time.Since(t0)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			if !counted {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			res.offered++
			switch {
			case err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Timeout")):
				res.timedOut++
			case err != nil:
				res.other++
			case resp.StatusCode == http.StatusServiceUnavailable:
				res.shed++
			case resp.StatusCode == http.StatusOK:
				res.lat = append(res.lat, took)
				if took <= slo {
					res.good++
				}
			default:
				res.other++
			}
		})
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
	}
	wg.Wait()
	return res
}

// capacity measures the server's throughput with no guard, closed loop,
// 4 callers for d.
func capacity(url string, d time.Duration) float64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var n atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if resp, err := client.Get(url); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / d.Seconds()
}

func TestOverloadRig(t *testing.T) {
	if !*overloadRig {
		t.Skip("issue 33's real-server comparison is opt-in: go test -run '^TestOverloadRig$' -overloadrig (a few minutes, 2 idle cores)")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("the rig needs 2 cores: one for the server, one for the load")
	}
	// This process makes the load, on CPU 1; the servers run on CPU 0.
	var set unix.CPUSet
	set.Set(1)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Logf("the load is not pinned: %v", err)
	}
	iters := calibrate(*overloadRigWork)
	base := startRigServer(t, "none", iters)
	unloaded := drive(base, 20, 3*time.Second, time.Second, 1)
	p50, p99 := unloaded.p(0.5), unloaded.p(0.99)
	slo := 5 * p50
	c := capacity(base, 3*time.Second)
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, %s; the server on 1 core (GOMAXPROCS 1), the load on another; work %v a request (%d rounds); unloaded p50 %v, p99 %v; SLO 5 × p50 = %v; capacity (closed loop, 4 callers, no guard) %.0f/s; runs of %v, the first quarter not counted\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.Version(), *overloadRigWork, iters,
		p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), slo.Round(10*time.Microsecond), c, *overloadRigRun)
	fmt.Fprintf(&sb, "%-18s %5s %9s %9s %7s %8s %9s %9s %10s\n", "protection", "load", "offered/s", "goodput", "shed", "timeout", "p50", "p99", "p99/unl.")
	var loads []float64
	for _, f := range strings.Split(*overloadRigLoad, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 {
			t.Fatalf("-overloadrig.loads: %q is not a positive number", f)
		}
		loads = append(loads, v)
	}
	for _, load := range loads {
		for i, pr := range protections {
			if !strings.Contains(pr.name, *overloadRigOnly) {
				continue
			}
			url := startRigServer(t, pr.name, iters)
			r := drive(url, load*c, *overloadRigRun, slo, uint64(10*load)+uint64(i))
			fmt.Fprintf(&sb, "%-18s %4.1f× %9.0f %8.1f%% %6.1f%% %7.1f%% %9v %9v %9.2f×\n", pr.name, load,
				float64(r.offered)/r.secs, 100*float64(r.good)/r.secs/c, 100*float64(r.shed)/float64(max(r.offered, 1)),
				100*float64(r.timedOut)/float64(max(r.offered, 1)), r.p(0.5).Round(10*time.Microsecond), r.p(0.99).Round(10*time.Microsecond),
				float64(r.p(0.99))/float64(max(p99, 1)))
		}
	}
	t.Log("\n" + sb.String())
	if *overloadRigOut != "" {
		if err := os.WriteFile(*overloadRigOut, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
