package rlsstats_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/rlsstats"
)

// server is a statsd server on loopback that hands over the lines each
// connection sends.
type server struct {
	l     net.Listener
	lines chan string
	conns chan net.Conn
}

// close stops the server and drops its connections.
func (s *server) close() {
	s.l.Close()
	for {
		select {
		case c := <-s.conns:
			c.Close()
		default:
			return
		}
	}
}

func listen(t *testing.T, addr string) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{l: l, lines: make(chan string, 100000), conns: make(chan net.Conn, 100)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.conns <- c
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					s.lines <- sc.Text()
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

// read returns the next n lines.
func (s *server) read(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case l := <-s.lines:
			got = append(got, l)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d lines, want %d: %q", len(got), n, got)
		}
	}
	return got
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newStatsd is a Statsd sending to a new server on loopback, and that
// server. Its interval is an hour, so the test flushes; cancel ends it
// with a last flush (the test's end cancels it too).
func newStatsd(t *testing.T) (s *rlsstats.Statsd, srv *server, cancel context.CancelFunc) {
	t.Helper()
	srv = listen(t, "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := rlsstats.NewStatsd(ctx, srv.l.Addr().String(), time.Hour, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv, cancel
}

func TestStatsd(t *testing.T) {
	s, srv, cancel := newStatsd(t)
	s.Add("rl.foo_bar", rlsstats.Counts{TotalHits: 2, WithinLimit: 2})
	s.Add("rl.foo_bar", rlsstats.Counts{TotalHits: 1, OverLimit: 1})
	s.Add("rl.foo_bar", rlsstats.Counts{TotalHits: 2, OverLimit: 2, OverLimitWithLocalCache: 2})
	s.Add("edge.remote_address_10.0.0.1", rlsstats.Counts{TotalHits: 1, NearLimit: 1, WithinLimit: 1})
	s.Request("ShouldRateLimit", 1500*time.Microsecond)
	s.Error("redis_error")
	s.ConfigLoad(true)
	s.Flush()
	want := []string{
		"ratelimit.service.call.should_rate_limit.redis_error:1|c",
		"ratelimit.service.config_load_success:1|c",
		"ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.near_limit:1|c",
		"ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.total_hits:1|c",
		"ratelimit.service.rate_limit.edge.remote_address_10_0_0_1.within_limit:1|c",
		"ratelimit.service.rate_limit.rl.foo_bar.over_limit:3|c",
		"ratelimit.service.rate_limit.rl.foo_bar.over_limit_with_local_cache:2|c",
		"ratelimit.service.rate_limit.rl.foo_bar.total_hits:5|c",
		"ratelimit.service.rate_limit.rl.foo_bar.within_limit:2|c",
		"ratelimit_server.ShouldRateLimit.total_requests:1|c",
		"ratelimit_server.ShouldRateLimit.response_time:1.5|ms",
	}
	if got := srv.read(t, len(want)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("first flush:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A flush sends the increase since the last one; nothing new, nothing sent.
	s.Flush()
	s.Add("rl.foo_bar", rlsstats.Counts{TotalHits: 4, WithinLimit: 4})
	s.Flush()
	want = []string{"ratelimit.service.rate_limit.rl.foo_bar.total_hits:4|c", "ratelimit.service.rate_limit.rl.foo_bar.within_limit:4|c"}
	if got := srv.read(t, 2); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("second flush: %q, want %q", got, want)
	}
	// The end of ctx flushes what is left.
	s.ConfigLoad(false)
	cancel()
	if got := srv.read(t, 1); got[0] != "ratelimit.service.config_load_error:1|c" {
		t.Errorf("last flush: %q", got)
	}
}

// TestStatsdServerGone: a flush while the server is down loses its counts
// and blocks nothing; once the server is back, the next flush reconnects.
func TestStatsdServerGone(t *testing.T) {
	s, srv, _ := newStatsd(t)
	addr := srv.l.Addr().String()
	s.ConfigLoad(true)
	s.Flush()
	srv.read(t, 1)
	srv.close()
	// The open connection may still take a write or two before it fails;
	// flushes go on failing until a new server listens.
	for i := 0; i < 3; i++ {
		s.ConfigLoad(true)
		s.Flush()
	}
	srv2 := listen(t, addr)
	s.Error("service_error")
	s.Flush()
	s.Error("service_error")
	s.Flush()
	got := srv2.read(t, 1)
	if !strings.HasPrefix(got[0], "ratelimit.service.call.should_rate_limit.service_error:1|c") {
		t.Errorf("after reconnecting: %q", got)
	}
}

// TestStatsdBounded: keys past the bound are counted under their domain's
// overflow name, so a client spraying values cannot grow the map.
func TestStatsdBounded(t *testing.T) {
	s, srv, _ := newStatsd(t)
	const n = 30000
	for i := range n {
		s.Add(fmt.Sprintf("edge.path_/%d", i), rlsstats.Counts{TotalHits: 1})
	}
	s.Flush()
	lines := srv.read(t, 20001)
	total, overflow := 0, 0
	for _, l := range lines {
		var v int
		name, count, _ := strings.Cut(l, ":")
		fmt.Sscanf(count, "%d|c", &v)
		total += v
		if name == "ratelimit.service.rate_limit.edge.overflow.total_hits" {
			overflow = v
		}
	}
	if total != n || overflow != n-20000 {
		t.Errorf("total %d (want %d), overflow %d (want %d)", total, n, overflow, n-20000)
	}
}

func TestStatsdBadSettings(t *testing.T) {
	for _, c := range []struct {
		addr     string
		interval time.Duration
	}{{"statsd", time.Second}, {"127.0.0.1:8125", 0}} {
		if _, err := rlsstats.NewStatsd(context.Background(), c.addr, c.interval, quiet); err == nil || !strings.HasPrefix(err.Error(), "rlsstats: ") {
			t.Errorf("%q %v: error %v", c.addr, c.interval, err)
		}
	}
}
