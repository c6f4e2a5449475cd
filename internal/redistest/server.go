package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	readyTimeout = 10 * time.Second // start or restart until PONG
	stopGrace    = 5 * time.Second  // SIGTERM until SIGKILL
	killTimeout  = 10 * time.Second // SIGKILL until the process is reaped
	startTries   = 5                // fresh ports tried when one is taken
)

// errPortInUse: the server could not bind its port (or cluster bus port),
// which another process took after the harness found it free.
var errPortInUse = errors.New("port already in use")

// Server is one redis-server process listening on 127.0.0.1. Its methods
// report failures through the testing.TB it was started with, so call them
// from that test's goroutine.
type Server struct {
	t        testing.TB
	bin      string
	dir      string
	password string
	sentinel bool                  // started with --sentinel
	config   func(port int) string // redis.conf for a port
	port     int
	confPort int // port of the redis.conf written; 0 before the first
	cmd      *exec.Cmd
	done     chan struct{} // closed once cmd has exited and been reaped
	expected bool          // the harness stopped the process itself
}

// Start starts a redis-server for t on a free 127.0.0.1 port, waits until
// it answers PING and stops it when t ends. It skips t as [Require] does
// when redis-server is not installed.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := collect(opts)
	s := newServer(t, Require(t), o.password, func(s *Server, port int) string {
		return s.dataConfig(port, o)
	})
	if err := s.startFresh(false); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

func newServer(t testing.TB, bin, password string, config func(s *Server, port int) string) *Server {
	s := &Server{t: t, bin: bin, dir: t.TempDir(), password: password}
	s.config = func(port int) string { return config(s, port) }
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
	// The port was ours a moment ago; give a lingering holder a little time.
	var err error
	for try := 0; try < startTries; try++ {
		if err = s.launch(); !errors.Is(err, errPortInUse) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart %s: %v", s.Addr(), err)
	}
}

// startFresh picks a free port (with a free cluster bus port if bus) and
// launches the server, trying another port when one is taken meanwhile.
func (s *Server) startFresh(bus bool) error {
	var err error
	for try := 0; try < startTries; try++ {
		if s.port, err = freePort(bus); err != nil {
			return err
		}
		if err = s.launch(); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return fmt.Errorf("%d ports in a row were taken before redis-server could bind them: %w", startTries, err)
}

// launch writes the config for s.port, starts the process and waits for
// PONG; if the process exits first, it is reaped and its log returned.
func (s *Server) launch() error {
	conf := filepath.Join(s.dir, "redis.conf")
	// A restart keeps the file: the server or a sentinel may have rewritten
	// it (CONFIG REWRITE after a failover) and must come back as it left.
	if s.confPort != s.port {
		if err := os.WriteFile(conf, []byte(s.config(s.port)), 0o644); err != nil {
			return err
		}
		s.confPort = s.port
	}
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{conf}
	if s.sentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	out.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.cmd, s.done, s.expected = cmd, done, false
	err = s.waitReady()
	// The error already quotes the log; the cleanup need not repeat it.
	s.expected = err != nil
	return err
}

func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	delay := 5 * time.Millisecond
	for {
		select {
		case <-s.done:
			// Logs accumulate over attempts and restarts: only this port
			// (or its cluster bus port) being taken counts.
			log := s.logTail()
			if strings.Contains(log, fmt.Sprintf(":%d: bind: Address already in use", s.port)) ||
				strings.Contains(log, fmt.Sprintf(":%d: bind: Address already in use", s.port+busOffset)) {
				return fmt.Errorf("%s: %w", s.Addr(), errPortInUse)
			}
			return fmt.Errorf("redis-server on %s exited (%v) before answering PING; log:\n%s", s.Addr(), s.cmd.ProcessState, log)
		default:
		}
		reply, err := command(s.Addr(), s.password, "PING")
		if err == nil && reply == "PONG" {
			// Another process may have taken the port, and ours not exited
			// yet; only our own server will do.
			if reply, err = s.ownPID(); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING within %v (last: %v %v); log:\n%s", s.Addr(), readyTimeout, reply, err, s.logTail())
		}
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// ownPID checks that the server answering on s.port is s's process.
func (s *Server) ownPID() (string, error) {
	info, err := commandString(s.Addr(), s.password, "INFO", "server")
	pid := infoField(info, "process_id")
	if err == nil && pid != strconv.Itoa(s.cmd.Process.Pid) {
		err = fmt.Errorf("%s is answered by process %q, not by redis-server pid %d", s.Addr(), pid, s.cmd.Process.Pid)
	}
	return pid, err
}

// terminate sends sig, waits grace, then sends SIGKILL and waits for the
// process to be reaped.
func (s *Server) terminate(sig syscall.Signal, grace time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	s.expected = true
	if sig != syscall.SIGKILL {
		s.cmd.Process.Signal(sig)
		select {
		case <-s.done:
			return nil
		case <-time.After(grace):
		}
	}
	s.cmd.Process.Kill()
	select {
	case <-s.done:
		return nil
	case <-time.After(killTimeout):
		return fmt.Errorf("redis-server (pid %d) still running %v after SIGKILL", s.cmd.Process.Pid, killTimeout)
	}
}

func (s *Server) cleanup() {
	if s.cmd != nil && !s.expected {
		select {
		case <-s.done:
			s.t.Logf("redistest: redis-server on %s had exited on its own (%v); log:\n%s", s.Addr(), s.cmd.ProcessState, s.logTail())
		default:
		}
	}
	if err := s.terminate(syscall.SIGTERM, stopGrace); err != nil {
		s.t.Errorf("redistest: %v", err)
	}
}

// logTail returns the last lines of the server's log and of what it wrote
// to stdout or stderr before its log was open.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"stdout.log", "redis.log"} {
		data, _ := os.ReadFile(filepath.Join(s.dir, name))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		if len(data) > 0 {
			fmt.Fprintf(&b, "--- %s\n%s\n", name, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}
