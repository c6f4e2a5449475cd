package redisproc_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redisproc"
	"github.com/floodgate/floodgate/internal/redistest"
)

// start starts a server for t in a directory of its own and terminates it
// when t ends.
func start(t *testing.T, c redisproc.Config) *redisproc.Process {
	t.Helper()
	c.Bin = redistest.Require(t)
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	p, err := redisproc.Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	p := start(t, redisproc.Config{Lines: []string{`save ""`, "maxmemory 1mb"}})
	if host, _, _ := net.SplitHostPort(p.Addr()); host != "127.0.0.1" {
		t.Fatalf("Addr() = %s, want 127.0.0.1:port", p.Addr())
	}
	if pid, err := redisproc.PID(p.Addr(), ""); err != nil || pid != p.Cmd().Process.Pid {
		t.Fatalf("PID(%s) = %d, %v; want the started process, %d", p.Addr(), pid, err, p.Cmd().Process.Pid)
	}
	if got, err := redisproc.Command(p.Addr(), "", "CONFIG", "GET", "maxmemory"); err != nil || got.([]any)[1] != "1048576" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want the 1mb of Lines", got, err)
	}
	if _, err := p.Restart(context.Background()); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("Restart of a running server: %v, want an error", err)
	}

	if err := p.Terminate(syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Terminate")
	}
	if st := p.Wait(); !st.Exited() || !st.Success() {
		t.Errorf("after SIGTERM: %v, want a clean exit", st)
	}
	if _, err := redisproc.Command(p.Addr(), "", "PING"); err == nil {
		t.Fatalf("%s still answers PING after Terminate", p.Addr())
	}

	q, err := p.Restart(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Kill() })
	if q.Addr() != p.Addr() {
		t.Errorf("restarted on %s, want %s", q.Addr(), p.Addr())
	}
	if err := q.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := q.Kill(); err != nil { // of an exited process: nothing
		t.Fatal(err)
	}
	if !strings.Contains(q.LogTail(), "--- redis.log") {
		t.Errorf("LogTail lacks redis.log:\n%s", q.LogTail())
	}
}

// TestPassword: the readiness check authenticates with Password, and a
// password with spaces and quotes stays one argument.
func TestPassword(t *testing.T) {
	t.Parallel()
	const pw = `s3 "cret\`
	p := start(t, redisproc.Config{Lines: []string{"requirepass " + redisproc.Quote(pw)}, Password: pw})
	if _, err := redisproc.Command(p.Addr(), "", "PING"); !errors.As(err, new(redisproc.ReplyError)) || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Errorf("PING without AUTH: %v, want a NOAUTH reply", err)
	}
	if got, err := redisproc.Command(p.Addr(), pw, "PING"); err != nil || got != "PONG" {
		t.Errorf("PING with the password: %v, %v", got, err)
	}
}

// TestNotReady: a server that never answers as itself fails Start when ctx
// ends, and Start leaves no process behind.
func TestNotReady(t *testing.T) {
	bin := redistest.Require(t)
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	// Without Password the check's PING gets NOAUTH, so it never succeeds.
	_, err := redisproc.Start(ctx, redisproc.Config{Bin: bin, Dir: dir, Lines: []string{"requirepass x"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start: %v, want the context's deadline", err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "redis.conf"))
	if !strings.Contains(string(data), "\nrequirepass x\n") {
		t.Errorf("redis.conf lacks the Lines:\n%s", data)
	}
}

// TestStartFailure: a server that exits fails Start at once, quoting its
// log; so does a binary that cannot be run, without Redis.
func TestStartFailure(t *testing.T) {
	t.Parallel()
	_, err := redisproc.Start(context.Background(), redisproc.Config{Bin: filepath.Join(t.TempDir(), "redis-server"), Dir: t.TempDir()})
	if err == nil || !strings.HasPrefix(err.Error(), "redisproc: start ") {
		t.Errorf("Start of a missing binary: %v", err)
	}

	bin := redistest.Require(t)
	begin := time.Now()
	_, err = redisproc.Start(context.Background(), redisproc.Config{Bin: bin, Dir: t.TempDir(), Lines: []string{"no-such-directive yes"}})
	if err == nil || !strings.Contains(err.Error(), "before answering PING") || !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("Start with a bad directive: %v, want the exit quoting the log", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("the failure took %v; Start should see the exit, not wait out its deadline", d)
	}
}

// TestRestartPortTaken: while another process holds the port, Restart
// gives up with ErrPortInUse.
func TestRestartPortTaken(t *testing.T) {
	t.Parallel()
	p := start(t, redisproc.Config{})
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		t.Skipf("the port was taken by someone else meanwhile: %v", err)
	}
	defer l.Close()
	if q, err := p.Restart(context.Background()); !errors.Is(err, redisproc.ErrPortInUse) {
		if q != nil {
			q.Kill()
		}
		t.Fatalf("Restart on a taken port: %v, want ErrPortInUse", err)
	}
}
