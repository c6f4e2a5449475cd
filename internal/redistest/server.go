package redistest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redisproc"
)

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Server is one redis-server process listening on 127.0.0.1. Its methods
// report failures through the testing.TB it was started with, so call them
// from that test's goroutine.
type Server struct {
	t        testing.TB
	bin      string
	dir      string
	password string
	sentinel bool            // started with --sentinel
	lines    func() []string // redis.conf after redisproc's own lines
	port     int
	proc     *redisproc.Process // the running or last process; nil before the first
	cmd      *exec.Cmd          // proc's
	expected bool               // the harness stopped the process itself
}

// Start starts a redis-server for t on a free 127.0.0.1 port, waits until
// it answers PING and stops it when t ends. It skips t as [Require] does
// when redis-server is not installed.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := collect(opts)
	s := newServer(t, Require(t), o.password, func(s *Server) []string {
		return dataConfig(o)
	})
	if err := s.startFresh(false); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

func newServer(t testing.TB, bin, password string, lines func(s *Server) []string) *Server {
	s := &Server{t: t, bin: bin, dir: t.TempDir(), password: password}
	s.lines = func() []string { return lines(s) }
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(s.cleanup)
	return s
}

// Addr returns the server's address, "127.0.0.1:port"; it stays the same
// across Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Password returns the password given with [WithPassword], or "".
func (s *Server) Password() string { return s.password }

// Dir returns the server's working directory, which holds redis.conf,
// redis.log and any data files.
func (s *Server) Dir() string { return s.dir }

// Kill kills the server with SIGKILL, as a crash would, and waits until the
// process is gone. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.terminate(syscall.SIGKILL, 0); err != nil {
		s.t.Fatalf("redistest: kill %s: %v", s.Addr(), err)
	}
}

// Stop shuts the server down with SIGTERM (SIGKILL if it takes longer than
// 5 s) and waits until the process is gone. Stopping a stopped server does
// nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.terminate(syscall.SIGTERM, stopGrace); err != nil {
		s.t.Fatalf("redistest: stop %s: %v", s.Addr(), err)
	}
}

// Restart stops the server if it is running, starts it again on the same
// port and directory, and waits until it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.terminate(syscall.SIGTERM, stopGrace); err != nil {
		s.t.Fatalf("redistest: restart %s: %v", s.Addr(), err)
	}
	p, err := s.proc.Restart(context.Background())
	if err != nil {
		s.t.Fatalf("redistest: restart %s: %v", s.Addr(), err)
	}
	s.running(p)
}

// startFresh starts the server on a free port (with a free cluster bus port
// if bus).
func (s *Server) startFresh(bus bool) error {
	var args []string
	if s.sentinel {
		args = []string{"--sentinel"}
	}
	p, err := redisproc.Start(context.Background(), redisproc.Config{
		Bin:        s.bin,
		Dir:        s.dir,
		Lines:      s.lines(),
		Args:       args,
		Password:   s.password,
		ClusterBus: bus,
	})
	if err != nil {
		return err
	}
	s.running(p)
	return nil
}

func (s *Server) running(p *redisproc.Process) {
	s.proc, s.cmd, s.port, s.expected = p, p.Cmd(), p.Port(), false
}

// terminate sends sig, waits grace, then sends SIGKILL and waits for the
// process to be reaped.
func (s *Server) terminate(sig syscall.Signal, grace time.Duration) error {
	if s.proc == nil {
		return nil
	}
	select {
	case <-s.proc.Done():
		return nil
	default:
	}
	s.expected = true
	return s.proc.Terminate(sig, grace)
}

func (s *Server) cleanup() {
	if s.proc != nil && !s.expected {
		select {
		case <-s.proc.Done():
			s.t.Logf("redistest: redis-server on %s had exited on its own (%v); log:\n%s", s.Addr(), s.proc.Wait(), s.logTail())
		default:
		}
	}
	// SIGKILL, not SIGTERM: the test is over and its directory is removed
	// next, so there is nothing to shut down cleanly, and a server acts on
	// SIGTERM only at its next cron tick, up to 100 ms later, which every
	// test that starts a server would wait.
	if err := s.terminate(syscall.SIGKILL, 0); err != nil {
		s.t.Errorf("redistest: %v", err)
	}
}

// logTail returns the last lines of the server's log and of what it wrote
// to stdout or stderr before its log was open.
func (s *Server) logTail() string { return s.proc.LogTail() }
