package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/redisproc"
)

// errNoRedis is the whole message when there is no Redis to use.
var errNoRedis = errors.New("no Redis: set REDIS_ADDR=host:port or install redis-server (Debian/Ubuntu: apt-get install redis-server)")

// withRedis calls fn with the address of a Redis and a few words on where
// it came from: REDIS_ADDR, or else a throwaway redis-server that is
// stopped, and its directory removed, when fn returns.
func withRedis(ctx context.Context, fn func(addr, about string) error) error {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return fn(addr, "from REDIS_ADDR")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return errNoRedis
	}
	srv, err := startRedis(ctx, bin)
	if err != nil {
		return err
	}
	err = fn(srv.addr, "a throwaway redis-server in "+srv.dir+", no persistence, stopped on exit")
	return errors.Join(err, srv.stop())
}

// redisServer is a throwaway redis-server: a free 127.0.0.1 port, a
// temporary directory, no persistence.
type redisServer struct {
	addr string
	dir  string
	proc *redisproc.Process
	cmd  *exec.Cmd       // proc's
	done <-chan struct{} // closed once the process has exited and been reaped
}

// stopGrace is how long stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// startRedis starts bin on a free 127.0.0.1 port in a new temporary
// directory and waits until it answers PING. Stop it with stop, which also
// removes the directory.
func startRedis(ctx context.Context, bin string) (*redisServer, error) {
	dir, err := os.MkdirTemp("", "floodgate-redis-")
	if err != nil {
		return nil, err
	}
	p, err := redisproc.Start(ctx, redisproc.Config{
		Bin:   bin,
		Dir:   dir,
		Lines: []string{`save ""`, "appendonly no"},
		// A Ctrl-C in the terminal then reaches only this program, which
		// stops the HTTP servers and then Redis, in that order.
		OwnGroup: true,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &redisServer{addr: p.Addr(), dir: dir, proc: p, cmd: p.Cmd(), done: p.Done()}, nil
}

// stop stops the server (SIGTERM; SIGKILL after stopGrace) and removes its
// directory.
func (s *redisServer) stop() error {
	err := s.proc.Terminate(syscall.SIGTERM, stopGrace)
	if rerr := os.RemoveAll(s.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}
