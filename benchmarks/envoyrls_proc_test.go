package benchmarks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/floodgate/floodgate/internal/redisproc"
)

// The two rate-limit services of BenchmarkEnvoyRLS run as processes of
// their own, each built with `go build` from its own module: floodgate's
// cmd/floodgate-ratelimit from the repository's root module (the
// dependency versions floodgate is tested with), envoyproxy/ratelimit's
// src/service_cmd from envoyratelimit/, a module that only names it as a
// tool (its go.mod pins the versions envoyproxy/ratelimit's own go.mod
// asks for, which are older than this module's gRPC and go-control-plane;
// here they would be raised to ours).

// rlsStartTimeout bounds a service's start: listening, its configuration
// loaded, its first answer.
const rlsStartTimeout = 30 * time.Second

// fetchFailure matches what `go build` prints when a module it needs is
// neither in the module cache nor reachable: such a build skips the
// benchmark instead of failing it.
var fetchFailure = regexp.MustCompile(`(?i)module lookup disabled|dial tcp|no such host|i/o timeout|proxy\.golang|GOPROXY|GOFLAGS=-mod=mod|403 Forbidden|404 Not Found|not available|missing go\.sum entry|connection refused|TLS handshake`)

// goBuild builds pkg in the module at dir into out. It skips tb when the
// go command is missing or a module cannot be fetched, and fails it on any
// other build error.
func goBuild(tb testing.TB, dir, pkg, out string) {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("the go command is not in PATH: cannot build %s", pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
	cmd.Dir = dir
	msg, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	if fetchFailure.Match(msg) {
		tb.Skipf("cannot build %s (in %s): a module could not be fetched (no module proxy and not in the module cache?):\n%s", pkg, dir, msg)
	}
	tb.Fatalf("go build %s (in %s): %v\n%s", pkg, dir, err, msg)
}

// buildFloodgateRLS builds cmd/floodgate-ratelimit into dir.
func buildFloodgateRLS(tb testing.TB, dir string) string {
	tb.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, "floodgate-ratelimit")
	goBuild(tb, root, "./cmd/floodgate-ratelimit", out)
	return out
}

// buildEnvoyRLS builds envoyproxy/ratelimit's service into dir, from the
// envoyratelimit module beside this file.
func buildEnvoyRLS(tb testing.TB, dir string) string {
	tb.Helper()
	mod, err := filepath.Abs("envoyratelimit")
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, "envoy-ratelimit")
	goBuild(tb, mod, "github.com/envoyproxy/ratelimit/src/service_cmd", out)
	return out
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rlsProc is a service process and a gRPC client of it.
type rlsProc struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	log    string // the process's output file
	exited chan struct{}
	conn   *grpc.ClientConn
	client rlsv3.RateLimitServiceClient
	leases bool // decides from local quota leases: may send Redis less than a command a request
}

// startProc starts bin with args and env (nothing else of this process's
// environment but PATH and HOME), its output in a file of dir, and kills
// it when tb ends (and, on Linux, when this process dies). grpcAddr is
// where it serves the rate-limit service.
func startProc(tb testing.TB, name, dir, bin string, args, env []string, grpcAddr string) *rlsProc {
	tb.Helper()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = redisproc.SysProcAttr(false)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		tb.Fatalf("%s: %v", name, err)
	}
	p := &rlsProc{name: name, cmd: cmd, pid: cmd.Process.Pid, log: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			tb.Errorf("%s (pid %d) did not exit within 10 s of SIGKILL", name, p.pid)
		}
	})
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	p.conn, p.client = conn, rlsv3.NewRateLimitServiceClient(conn)
	return p
}

// logTail returns the end of the process's output.
func (p *rlsProc) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// startFloodgateRLS runs floodgate-ratelimit on Redis at redisAddr with
// the configuration directory conf, and waits until it answers.
func startFloodgateRLS(tb testing.TB, name, dir, bin, redisAddr, conf string, args ...string) *rlsProc {
	tb.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
	p := startProc(tb, name, dir, bin,
		append([]string{"-grpc", addr, "-http", "", "-redis", redisAddr, "-config", conf}, args...), nil, addr)
	waitAnswering(tb, p)
	return p
}

// startEnvoyRLS runs envoyproxy/ratelimit on Redis at redisAddr with the
// configuration in root/ratelimit/config, configured by its environment
// variables (src/settings/settings.go), and waits until it answers. Its
// other settings keep their defaults: no local cache
// (LOCAL_CACHE_SIZE_IN_BYTES=0), a pool of 10 Redis connections
// (REDIS_POOL_SIZE) that waits when all are busy, every request's
// INCRBY and EXPIRE commands in one explicit pipeline written at once
// (REDIS_PIPELINE_WINDOW=0), keys' TTLs stretched by up to 300 s of jitter.
func startEnvoyRLS(tb testing.TB, dir, bin, redisAddr, root string) *rlsProc {
	tb.Helper()
	grpcPort := freePort(tb)
	env := []string{
		"USE_STATSD=false",
		"LOG_LEVEL=error",
		"REDIS_SOCKET_TYPE=tcp",
		"REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root,
		"RUNTIME_SUBDIRECTORY=ratelimit",
		"RUNTIME_WATCH_ROOT=false",
		"RUNTIME_IGNOREDOTFILES=true",
		"HOST=127.0.0.1",
		"PORT=" + strconv.Itoa(freePort(tb)),
		"GRPC_HOST=127.0.0.1",
		"GRPC_PORT=" + strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1",
		"DEBUG_PORT=" + strconv.Itoa(freePort(tb)),
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort))
	p := startProc(tb, "envoyproxy", dir, bin, nil, env, addr)
	waitAnswering(tb, p)
	return p
}

// waitAnswering waits until p answers a one-descriptor request with the
// benchmark's limit: it is listening, on Redis, with the configuration
// loaded.
func waitAnswering(tb testing.TB, p *rlsProc) {
	tb.Helper()
	req := rlsRequest("ready", 1)
	deadline := time.Now().Add(rlsStartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			tb.Fatalf("%s exited while starting: %v\n%s", p.name, p.cmd.ProcessState, p.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := p.client.ShouldRateLimit(ctx, req)
		cancel()
		if err == nil {
			if last = answersLimit(resp, 1); last == nil {
				return
			}
		} else {
			last = err
		}
		time.Sleep(50 * time.Millisecond) // real I/O: a process starting
	}
	tb.Fatalf("%s did not answer within %v: %v\n%s", p.name, rlsStartTimeout, last, p.logTail())
}

// answersLimit checks that resp admits each of d descriptors under the
// benchmark's limit (so the configuration is the one written).
func answersLimit(resp *rlsv3.RateLimitResponse, d int) error {
	if resp.GetOverallCode() != rlsv3.RateLimitResponse_OK {
		return fmt.Errorf("overall code %v", resp.GetOverallCode())
	}
	if len(resp.GetStatuses()) != d {
		return fmt.Errorf("%d statuses for %d descriptors", len(resp.GetStatuses()), d)
	}
	for i, st := range resp.GetStatuses() {
		if got := st.GetCurrentLimit().GetRequestsPerUnit(); got != rlsLimit {
			return fmt.Errorf("descriptor %d: current limit %d a unit, want %d (configuration not loaded?)", i, got, rlsLimit)
		}
	}
	return nil
}

// cpuTime returns the CPU time (user and system) the process has used so
// far, from /proc; ok is false where that cannot be read.
func (p *rlsProc) cpuTime() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// fields 14 and 15 (utime, stime) count from after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, false
	}
	// USER_HZ is 100 on Linux wherever Go runs.
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// exitedEarly fails tb when p is no longer running.
func (p *rlsProc) exitedEarly(tb testing.TB) {
	tb.Helper()
	select {
	case <-p.exited:
		tb.Fatalf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, p.logTail())
	default:
	}
}

// selfCPU returns the CPU time (user and system) this process, the load
// generator, has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ticks are the machine's CPU time so far, all of it and the idle part
// (idle and iowait), in USER_HZ, from /proc/stat; zero where that cannot
// be read.
type ticks struct{ total, idle int64 }

func machineTicks() ticks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return ticks{}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return ticks{}
	}
	var t ticks
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return ticks{}
		}
		if i == 8 || i == 9 { // guest time, already counted in user
			continue
		}
		t.total += n
		if i == 3 || i == 4 {
			t.idle += n
		}
	}
	return t
}

// rss returns the process's resident memory now in MiB, from /proc; ok
// is false where that cannot be read.
func (p *rlsProc) rss() (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb / 1024, err == nil
			}
		}
	}
	return 0, false
}
