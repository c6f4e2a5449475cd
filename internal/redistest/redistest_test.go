package redistest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// do runs a command on s and fails t on an I/O error; error replies are
// returned.
func do(t testing.TB, s *Server, args ...string) (any, error) {
	t.Helper()
	reply, err := command(s.Addr(), s.password, args...)
	var re respError
	if err != nil && !errors.As(err, &re) {
		t.Fatalf("%s on %s: %v", strings.Join(args, " "), s.Addr(), err)
	}
	return reply, err
}

func mustDo(t testing.TB, s *Server, args ...string) any {
	t.Helper()
	reply, err := do(t, s, args...)
	if err != nil {
		t.Fatalf("%s on %s: %v", strings.Join(args, " "), s.Addr(), err)
	}
	return reply
}

func refused(t testing.TB, s *Server) {
	t.Helper()
	if _, err := command(s.Addr(), s.password, "PING"); err == nil {
		t.Fatalf("%s still answers PING", s.Addr())
	}
}

func TestServer(t *testing.T) {
	t.Parallel()
	s := Start(t)
	other := Start(t)
	if s.Addr() == other.Addr() || s.Dir() == other.Dir() {
		t.Fatalf("two servers share %s %s / %s %s", s.Addr(), s.Dir(), other.Addr(), other.Dir())
	}
	if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.1" {
		t.Fatalf("Addr() = %s, want 127.0.0.1:port", s.Addr())
	}
	if got := mustDo(t, s, "PING"); got != "PONG" {
		t.Fatalf("PING = %v", got)
	}
	mustDo(t, s, "SET", "k", "v")
	if got := mustDo(t, s, "GET", "k"); got != "v" {
		t.Fatalf("GET k = %v, want v", got)
	}
	if got := mustDo(t, s, "CONFIG", "GET", "save"); got.([]any)[1] != "" {
		t.Fatalf("CONFIG GET save = %v, want no snapshots", got)
	}

	addr := s.Addr()
	s.Kill()
	refused(t, s)
	s.Kill() // a no-op on a dead server
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("restarted on %s, want %s", s.Addr(), addr)
	}
	if got := mustDo(t, s, "GET", "k"); got != nil {
		t.Fatalf("GET k after restart = %v, want nil (no persistence)", got)
	}

	s.Stop()
	refused(t, s)
	s.Stop()
	s.Restart()
	s.Restart() // of a running server
	mustDo(t, s, "PING")
}

func TestServerPassword(t *testing.T) {
	t.Parallel()
	s := Start(t, WithPassword(`s3 "cret\`))
	if _, err := command(s.Addr(), "", "PING"); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v, want NOAUTH", err)
	}
	if _, err := command(s.Addr(), "wrong", "PING"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("PING with a wrong password: %v, want WRONGPASS", err)
	}
	if got := mustDo(t, s, "PING"); got != "PONG" {
		t.Fatalf("PING with Password() = %v", got)
	}
	s.Kill()
	s.Restart()
	mustDo(t, s, "PING")
}

func TestServerPersistence(t *testing.T) {
	t.Parallel()
	s := Start(t, WithPersistence(), WithConfig("maxmemory 1mb"))
	if got := mustDo(t, s, "CONFIG", "GET", "maxmemory"); got.([]any)[1] != "1048576" {
		t.Fatalf("CONFIG GET maxmemory = %v, want WithConfig's 1mb", got)
	}
	mustDo(t, s, "SET", "k", "v")
	s.Kill()
	s.Restart()
	if got := mustDo(t, s, "GET", "k"); got != "v" {
		t.Fatalf("GET k after kill and restart = %v, want v", got)
	}
}

// The child half of the tests below runs in a subprocess of the test binary.
const childEnv = "REDISTEST_CHILD"

func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run by the tests below in a subprocess")
	}
	switch mode {
	case "badconfig":
		Start(t, WithConfig("no-such-directive yes"))
		t.Fatal("Start returned although redis-server cannot have started")
	case "cluster":
		StartCluster(t, WithMasters(1))
		t.Fatal("StartCluster returned: the test was not skipped")
	case "sentinel":
		StartSentinel(t)
		t.Fatal("StartSentinel returned: the test was not skipped")
	}
	s := Start(t)
	os.WriteFile(os.Getenv("REDISTEST_PIDFILE"), []byte(strconv.Itoa(s.cmd.Process.Pid)), 0o644)
	switch mode {
	case "fail":
		t.Fatal("failing on purpose; the cleanup must still stop the server")
	case "exit":
		os.Exit(3) // no cleanup at all, as after go test -timeout
	}
}

// runChild runs TestChild with env added and returns its output and exit
// error.
func runChild(t *testing.T, env ...string) (string, error) {
	t.Helper()
	return runChildArgs(t, nil, env...)
}

// runChildArgs is runChild with more arguments to the test binary.
func runChildArgs(t *testing.T, args []string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestChild$", "-test.v", "-test.count=1"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, RequireEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestRequireWithoutRedis(t *testing.T) {
	t.Parallel()
	empty := "PATH=" + t.TempDir()
	out, err := runChild(t, empty, childEnv+"=pass")
	if err != nil || !strings.Contains(out, "--- SKIP: TestChild") {
		t.Errorf("without redis-server: %v, want a skip:\n%s", err, out)
	}
	if !strings.Contains(out, "redis-server not found in PATH; install it (Debian: apt-get install redis-server redis-tools)") {
		t.Errorf("skip message does not say how to install redis-server:\n%s", out)
	}
	out, err = runChild(t, empty, childEnv+"=pass", RequireEnv+"=1")
	if err == nil || !strings.Contains(out, "--- FAIL: TestChild") || !strings.Contains(out, RequireEnv+"=1 requires it") {
		t.Errorf("without redis-server and with %s=1: %v, want a failure:\n%s", RequireEnv, err, out)
	}
}

// TestSkipShort: under -short, a test that starts a Cluster or a Sentinel
// group is skipped, saying what -short leaves out; the same test fails
// without -short (it fails after the start, on purpose).
func TestSkipShort(t *testing.T) {
	Require(t)
	t.Parallel()
	for _, mode := range []string{"cluster", "sentinel"} {
		out, err := runChildArgs(t, []string{"-test.short"}, childEnv+"="+mode)
		if err != nil || !strings.Contains(out, "--- SKIP: TestChild") || !strings.Contains(out, "-short leaves out the tests that need") {
			t.Errorf("%s under -short: %v, want a skip saying what -short leaves out:\n%s", mode, err, out)
		}
	}
	if testing.Short() {
		return
	}
	out, err := runChild(t, childEnv+"=cluster")
	if err == nil || !strings.Contains(out, "StartCluster returned: the test was not skipped") {
		t.Errorf("cluster without -short: %v, want the child's failure after the start:\n%s", err, out)
	}
}

// TestStartFailure: a server that cannot start fails its test at once,
// with the reason from its log.
func TestStartFailure(t *testing.T) {
	Require(t)
	t.Parallel()
	start := time.Now()
	out, err := runChild(t, childEnv+"=badconfig")
	if err == nil || !strings.Contains(out, "before answering PING") || !strings.Contains(out, "no-such-directive") {
		t.Errorf("child: %v, want a failure quoting the bad directive from the log:\n%s", err, out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the failure took %v; the harness should see the exit, not wait out its deadline", d)
	}
}

// TestNoServerLeft: a failing test still stops its server, and one whose
// binary dies without cleanups does not leave it behind either (Linux).
func TestNoServerLeft(t *testing.T) {
	Require(t)
	if runtime.GOOS != "linux" {
		t.Skip("checks processes through /proc")
	}
	t.Parallel()
	for _, mode := range []string{"fail", "exit"} {
		pidfile := filepath.Join(t.TempDir(), "pid")
		out, err := runChild(t, childEnv+"="+mode, "REDISTEST_PIDFILE="+pidfile)
		if err == nil {
			t.Fatalf("%s: child test passed:\n%s", mode, out)
		}
		data, err := os.ReadFile(pidfile)
		if err != nil {
			t.Fatalf("%s: child did not start a server: %v\n%s", mode, err, out)
		}
		pid := string(data)
		deadline := time.Now().Add(5 * time.Second)
		for running(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: redis-server pid %s still running after its test binary ended", mode, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running reports whether pid is a live redis-server (not a zombie, which
// init may not reap in a container).
func running(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z") && strings.Contains(string(cmdline), "redis-server")
}
