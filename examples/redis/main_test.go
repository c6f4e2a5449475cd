package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/redistest"
)

// TestFleetAdmitsTheLimit runs the demo against a real redis-server: two
// servers, each with its own client and limiter, admit the limit between
// them, half each as the requests alternate, and nothing is refused for a
// Redis failure.
func TestFleetAdmitsTheLimit(t *testing.T) {
	srv := redistest.Start(t)
	var out bytes.Buffer
	rep, err := run(context.Background(), &out, config{redisAddr: srv.Addr(), redisAbout: "redistest"})
	if err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	total := 0
	for i, n := range rep.admitted {
		if n != policy.Events/2 {
			t.Errorf("server %d admitted %d, want %d (half the limit, as the requests alternate)", i, n, policy.Events/2)
		}
		total += n
	}
	if len(rep.admitted) != 2 || total != policy.Events || rep.storeFailed != 0 {
		t.Errorf("admitted %v (%d in all), %d refused for a store failure; want two servers admitting %d in all, none refused for a failure",
			rep.admitted, total, rep.storeFailed, policy.Events)
	}
	for _, want := range []string{
		fmt.Sprintf("server A admitted %d of %d\n", policy.Events/2, requests/2),
		fmt.Sprintf("server B admitted %d of %d\n", policy.Events/2, requests/2),
		fmt.Sprintf("the fleet admitted %d of %d: the limit of %d held for the fleet as a whole", policy.Events, requests, policy.Events),
		"(which would have admitted 20)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestNoRedis: with neither REDIS_ADDR nor redis-server in PATH, the error
// is the one line that says how to get a Redis.
func TestNoRedis(t *testing.T) {
	t.Setenv("REDIS_ADDR", "")
	t.Setenv("PATH", t.TempDir())
	err := withRedis(context.Background(), func(addr, about string) error {
		t.Errorf("called with %s (%s), want no Redis", addr, about)
		return nil
	})
	if !errors.Is(err, errNoRedis) {
		t.Fatalf("err = %v, want errNoRedis", err)
	}
	const want = "no Redis: set REDIS_ADDR=host:port or install redis-server (Debian/Ubuntu: apt-get install redis-server)"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestREDISADDR: REDIS_ADDR is used as it is, and nothing is started.
func TestREDISADDR(t *testing.T) {
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	t.Setenv("PATH", t.TempDir())
	var got string
	err := withRedis(context.Background(), func(addr, about string) error {
		got = addr
		return nil
	})
	if err != nil || got != "127.0.0.1:1" {
		t.Errorf("withRedis gave %q, %v; want REDIS_ADDR's 127.0.0.1:1", got, err)
	}
}

// TestThrowawayRedis: the program's own redis-server answers as itself
// while it runs, and once stopped its process is gone and its directory
// removed.
func TestThrowawayRedis(t *testing.T) {
	bin := redistest.Require(t)
	srv, err := startRedis(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := serverPID(srv.addr)
	if err != nil || pid != srv.cmd.Process.Pid {
		t.Errorf("INFO server on %s: pid %d, %v; want redis-server's pid %d", srv.addr, pid, err, srv.cmd.Process.Pid)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.done:
	default:
		t.Error("redis-server still running after stop")
	}
	if _, err := os.Stat(srv.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s after stop: %v, want it removed", srv.dir, err)
	}
}
