package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// redisServer is a throwaway redis-server: a free 127.0.0.1 port, a
// temporary directory, no persistence.
type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

const (
	readyTimeout = 10 * time.Second // from start until it answers PING
	stopGrace    = 5 * time.Second  // from SIGTERM until SIGKILL
)

// errPortTaken: another process took the free port before redis-server
// could bind it.
var errPortTaken = errors.New("port taken")

// startRedis starts bin on a free 127.0.0.1 port in a new temporary
// directory and waits until it answers PING. Stop it with stop, which also
// removes the directory.
func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "floodgate-redis-")
	if err != nil {
		return nil, err
	}
	for try := 0; try < 3; try++ {
		var s *redisServer
		if s, err = launch(ctx, bin, dir); err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

func launch(ctx context.Context, bin, dir string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	log.Close() // the child has its own descriptor
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.terminate()
		return nil, err
	}
	return s, nil
}

// waitReady waits until the server answers PING, as itself: the answer
// must come from its own process, not one that took the port meanwhile.
func (s *redisServer) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		select {
		case <-s.done:
			log := s.logTail()
			if strings.Contains(log, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("redis-server on %s exited (%v) before answering PING; its log:\n%s", s.addr, s.cmd.ProcessState, log)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		pid, err := serverPID(s.addr)
		if err == nil && pid == s.cmd.Process.Pid {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING within %v (%v); its log:\n%s", s.addr, readyTimeout, err, s.logTail())
		}
		time.Sleep(delay)
	}
}

// serverPID asks the Redis at addr for its process id (INFO server), over
// a bare connection: the Redis client library would log every refused
// dial while the server starts.
func serverPID(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO answered %q", strings.TrimSpace(head))
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
}

// stop stops the server (SIGTERM; SIGKILL after stopGrace) and removes its
// directory.
func (s *redisServer) stop() error {
	err := s.terminate()
	if rerr := os.RemoveAll(s.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

func (s *redisServer) terminate() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil {
		select {
		case <-s.done:
			return nil
		case <-time.After(stopGrace):
		}
	}
	s.cmd.Process.Kill()
	select {
	case <-s.done:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("redis-server (pid %d) still running after SIGKILL", s.cmd.Process.Pid)
	}
}

// logTail returns the end of the server's log.
func (s *redisServer) logTail() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
