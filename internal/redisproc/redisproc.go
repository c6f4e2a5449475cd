package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/pipeline"
)

const (
	// ReadyTimeout bounds how long [Start] and [Process.Restart] wait for a
	// server to answer PING as itself.
	ReadyTimeout = 10 * time.Second
	// KillTimeout bounds how long [Process.Terminate] waits for a process
	// to be reaped after SIGKILL.
	KillTimeout = 10 * time.Second

	startTries   = 5                      // ports, or restarts, tried while the port is taken
	restartPause = 200 * time.Millisecond // for a lingering holder of the port to let go
)

// ErrPortInUse reports that redis-server could not bind its port (or its
// cluster bus port): another process took it after it was found free.
// [Start] then tries other ports, and [Process.Restart] tries again, a few
// times before returning an error that wraps it.
var ErrPortInUse = errors.New("port already in use")

// Process is one redis-server process, started by [Start] or
// [Process.Restart] and answering on 127.0.0.1. Its methods are safe for
// concurrent use.
type Process struct {
	c    Config
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited and been reaped
}

// Start writes redis.conf for a free 127.0.0.1 port into c.Dir, starts
// c.Bin with it and waits until the server answers PING as itself, or
// until ctx ends or [ReadyTimeout] passes. When the port is taken before
// the server binds it, Start tries a fresh one. When Start returns an error,
// no process of it is left running; the error quotes the server's log tail.
func Start(ctx context.Context, c Config) (*Process, error) {
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	c.Dir = dir
	for try := 0; try < startTries; try++ {
		port, err := freePort(c.ClusterBus)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(c.Dir, "redis.conf"), []byte(c.conf(port)), 0o644); err != nil {
			return nil, fmt.Errorf("redisproc: %w", err)
		}
		p, err := launch(ctx, c, port)
		if !errors.Is(err, ErrPortInUse) {
			return p, prefix(err)
		}
	}
	return nil, fmt.Errorf("redisproc: %d ports in a row were taken before redis-server could bind them: %w", startTries, ErrPortInUse)
}

// Restart starts redis-server again on p's port, in p's directory, from
// redis.conf as p left it: the server may have rewritten it (CONFIG REWRITE,
// or a sentinel after a failover) and comes back as it was. p must have
// exited; stop it with [Process.Terminate] first. While the port is still
// taken, Restart tries again a few times, 200 ms apart. It waits for the new
// process as [Start] does.
func (p *Process) Restart(ctx context.Context) (*Process, error) {
	select {
	case <-p.done:
	default:
		return nil, fmt.Errorf("redisproc: restart %s: redis-server (pid %d) is still running; terminate it first", p.Addr(), p.cmd.Process.Pid)
	}
	var err error
	for try := 0; try < startTries; try++ {
		if try > 0 {
			if err := pipeline.Sleep(ctx, restartPause); err != nil {
				return nil, fmt.Errorf("redisproc: restart %s: %w", p.Addr(), err)
			}
		}
		var q *Process
		if q, err = launch(ctx, p.c, p.port); !errors.Is(err, ErrPortInUse) {
			return q, prefix(err)
		}
	}
	return nil, prefix(err)
}

// launch starts the server from c.Dir's redis.conf and waits until it is
// ready; if it exits first, it is reaped and its log quoted.
func launch(ctx context.Context, c Config, port int) (*Process, error) {
	out, err := os.OpenFile(filepath.Join(c.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Bin, append([]string{filepath.Join(c.Dir, "redis.conf")}, c.Args...)...)
	cmd.Dir = c.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = SysProcAttr(c.OwnGroup)
	err = cmd.Start()
	out.Close() // the child has its own descriptor
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	p := &Process{c: c, port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// waitReady polls the server until it answers as itself, returning as soon
// as the process exits or ctx ends, even in the middle of a poll: a server
// that fails to bind may leave the port to a holder that never answers.
func (p *Process) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(ReadyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		answered := make(chan error, 1)
		go func() { answered <- p.answers() }()
		var err error
		select {
		case <-p.done:
			return p.exited()
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s not ready: %w", p.Addr(), context.Cause(ctx))
		case err = <-answered:
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING within %v (last: %v); log:\n%s", p.Addr(), ReadyTimeout, err, p.LogTail())
		}
		t := time.NewTimer(delay)
		select {
		case <-p.done:
			t.Stop()
			return p.exited()
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("redis-server on %s not ready: %w", p.Addr(), context.Cause(ctx))
		case <-t.C:
		}
	}
}

// answers reports why the server does not answer PING as itself, or nil.
func (p *Process) answers() error {
	reply, err := Command(p.Addr(), p.c.Password, "PING")
	if err != nil || reply != "PONG" {
		return fmt.Errorf("PING: %v %v", reply, err)
	}
	// Another process may have taken the port, and ours not exited yet;
	// only our own server will do.
	pid, err := PID(p.Addr(), p.c.Password)
	if err == nil && pid != p.cmd.Process.Pid {
		err = fmt.Errorf("%s is answered by process %d, not by redis-server pid %d", p.Addr(), pid, p.cmd.Process.Pid)
	}
	return err
}

// exited explains why the process exited before it was ready: its port (or
// cluster bus port) was taken, or what its log says.
func (p *Process) exited() error {
	// stdout.log accumulates over attempts and restarts: only this port
	// being taken counts.
	log := p.LogTail()
	if strings.Contains(log, fmt.Sprintf(":%d: bind: Address already in use", p.port)) ||
		strings.Contains(log, fmt.Sprintf(":%d: bind: Address already in use", p.port+busOffset)) {
		return fmt.Errorf("%s: %w", p.Addr(), ErrPortInUse)
	}
	return fmt.Errorf("redis-server on %s exited (%v) before answering PING; log:\n%s", p.Addr(), p.cmd.ProcessState, log)
}

// Addr returns the server's address, "127.0.0.1:port".
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Port returns the port the server listens on.
func (p *Process) Port() int { return p.port }

// Cmd returns the started command, for its Process.Pid and, once the
// process has exited, its ProcessState. The Process waits on it itself:
// do not call its Wait, or change it.
func (p *Process) Cmd() *exec.Cmd { return p.cmd }

// Done returns a channel that is closed once the process has exited, by
// itself or through [Process.Terminate], and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until the process has exited and returns how it ended.
func (p *Process) Wait() *os.ProcessState {
	<-p.done
	return p.cmd.ProcessState
}

// Terminate sends sig (SIGTERM: a clean shutdown), sends SIGKILL if the
// process has not exited after grace, and waits until it is reaped. It
// returns an error only if the process is still there [KillTimeout] after
// SIGKILL. Terminating an exited process does nothing.
func (p *Process) Terminate(sig os.Signal, grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if sig != os.Kill && p.cmd.Process.Signal(sig) == nil {
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	p.cmd.Process.Kill()
	t := time.NewTimer(KillTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("redisproc: redis-server (pid %d) on %s still running %v after SIGKILL", p.cmd.Process.Pid, p.Addr(), KillTimeout)
	}
}

// Kill kills the process with SIGKILL, as a crash would, and waits until it
// is reaped, as [Process.Terminate] does.
func (p *Process) Kill() error { return p.Terminate(os.Kill, 0) }

// LogTail returns the last lines of the server's log and of what it wrote
// to stdout or stderr before its log was open, for error messages.
func (p *Process) LogTail() string {
	var b strings.Builder
	for _, name := range []string{"stdout.log", "redis.log"} {
		data, _ := os.ReadFile(filepath.Join(p.c.Dir, name))
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

// prefix marks an error from launch as the package's.
func prefix(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redisproc: %w", err)
}
