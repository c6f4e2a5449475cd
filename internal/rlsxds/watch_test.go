package rlsxds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

func TestTypeURL(t *testing.T) {
	if TypeURL != resource.RateLimitConfigType {
		t.Fatalf("TypeURL = %q, go-control-plane's is %q", TypeURL, resource.RateLimitConfigType)
	}
}

// limitOf returns "rpu/unit" of the rule domain's entries match, or
// "none".
func limitOf(c *rlsconfig.Config, domain string, entries ...rlsconfig.Entry) string {
	r := c.Match(domain, entries)
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%d/%s", r.RequestsPerUnit, r.Unit)
}

// TestWatchPushUpdateRemove follows one stream through a configuration
// pushed, replaced, and removed, as envoyproxy/ratelimit's provider test
// does, checking what the server sees of the client.
func TestWatchPushUpdateRemove(t *testing.T) {
	s := startServer(t)
	s.set("node-a", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	cfg := fastConfig(s, "node-a")
	cfg.NodeMetadata = map[string]string{"zone": "eu-1", "team": "web"}
	cfg.Headers = map[string]string{"X-Token": "secret", "x-team": "web"}
	w, ups := watch(t, cfg, nil)

	k1 := rlsconfig.Entry{Key: "k1", Value: "v1"}
	k2 := rlsconfig.Entry{Key: "k2", Value: "v2"}
	at, u := ups.waitFor(t, 0, "first configuration", func(u update) bool { return u.c.Domain("foo") != nil })
	if u.errs != nil {
		t.Fatalf("errors %v", u.errs)
	}
	if got := limitOf(u.c, "foo", k1); got != "3/minute" {
		t.Fatalf("foo k1=v1: %s, want 3/minute", got)
	}
	s.reqs.waitFor(t, 0, "ACK of version 1", ack("1"))
	if w.Version() != "1" || w.Config() != u.c {
		t.Fatalf("Version %q, Config %p; want 1, %p", w.Version(), w.Config(), u.c)
	}

	// What the server learns of the client.
	first := s.reqs.all()[0]
	if first.GetTypeUrl() != TypeURL || first.GetNode().GetId() != "node-a" || first.GetVersionInfo() != "" || first.GetResponseNonce() != "" || len(first.GetResourceNames()) != 0 {
		t.Errorf("first request: type %q node %q version %q nonce %q names %v; want %s, node-a, all empty",
			first.GetTypeUrl(), first.GetNode().GetId(), first.GetVersionInfo(), first.GetResponseNonce(), first.GetResourceNames(), TypeURL)
	}
	meta := first.GetNode().GetMetadata().AsMap()
	if len(meta) != 2 || meta["zone"] != "eu-1" || meta["team"] != "web" {
		t.Errorf("node metadata %v, want zone=eu-1 team=web", meta)
	}
	_, md := s.opens.waitFor(t, 0, "stream open", func(metadata.MD) bool { return true })
	if got := md.Get("x-token"); len(got) != 1 || got[0] != "secret" {
		t.Errorf("x-token %q, want [secret]", got)
	}
	if got := md.Get("x-team"); len(got) != 1 || got[0] != "web" {
		t.Errorf("x-team %q, want [web]", got)
	}

	s.set("node-a", "2", rateLimit("foo", "foo", "k2", "v2", 5, rlsconfv3.RateLimitUnit_HOUR))
	at, u = ups.waitFor(t, at+1, "second configuration", func(u update) bool { return u.c.Match("foo", []rlsconfig.Entry{k2}) != nil })
	if u.errs != nil {
		t.Fatalf("errors %v", u.errs)
	}
	if got1, got2 := limitOf(u.c, "foo", k1), limitOf(u.c, "foo", k2); got1 != "none" || got2 != "5/hour" {
		t.Fatalf("foo k1=v1 %s, k2=v2 %s; want none, 5/hour", got1, got2)
	}
	s.reqs.waitFor(t, 0, "ACK of version 2", ack("2"))

	// envoyproxy/ratelimit loads a response without resources as a
	// configuration without domains: no limits.
	s.set("node-a", "3")
	_, u = ups.waitFor(t, at+1, "empty configuration", func(u update) bool { return len(u.c.Domains()) == 0 })
	if u.errs != nil {
		t.Fatalf("errors %v", u.errs)
	}
	s.reqs.waitFor(t, 0, "ACK of version 3", ack("3"))
	if w.Version() != "3" || len(w.Config().Domains()) != 0 {
		t.Fatalf("Version %q with %d domains; want 3 with none", w.Version(), len(w.Config().Domains()))
	}
	for _, u := range ups.all() {
		if u.errs != nil {
			t.Errorf("unexpected errors %v", u.errs)
		}
	}
}

// TestWatchNACK pushes a resource that does not convert: the client
// refuses it with the reason, never acknowledges its version, keeps the
// configuration in force, and when the server sends it again refuses it
// again only after a wait, without a second report.
func TestWatchNACK(t *testing.T) {
	s := startServer(t)
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	cfg := fastConfig(s, "n")
	cfg.Backoff = Backoff{Initial: 7 * time.Millisecond, Max: time.Second, Factor: 2}
	waits := newRecorder[time.Duration]()
	release := make(chan struct{}, 10)
	sleep := func(ctx context.Context, d time.Duration) error {
		waits.add(d)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w, ups := watch(t, cfg, sleep)
	_, good := ups.waitFor(t, 0, "version 1", func(u update) bool { return u.c.Domain("foo") != nil })
	s.reqs.waitFor(t, 0, "ACK of version 1", ack("1"))

	// UNKNOWN, the unit's default, is no unit.
	s.set("n", "2", rateLimit("foo", "foo", "k2", "v2", 5, rlsconfv3.RateLimitUnit_UNKNOWN))
	_, bad := s.resps.waitFor(t, 0, "response 2", response("2"))
	at, u := ups.waitFor(t, 0, "refusal", func(u update) bool { return u.errs != nil })
	const why = `RateLimitConfig "foo": descriptors[0].rate_limit.unit: invalid rate limit unit "UNKNOWN"; use second, minute, hour, day, week, month or year (or unlimited: true)`
	if len(u.errs) != 1 || u.errs[0].Error() != `rlsxds: version "2" refused, the configuration of version "1" stays: `+why {
		t.Fatalf("errors %q", u.errs)
	}
	var ce *rlsconfig.Error
	if !errors.As(u.errs[0], &ce) || ce.Field != "descriptors[0].rate_limit.unit" {
		t.Errorf("error %v is not an *rlsconfig.Error of descriptors[0].rate_limit.unit", u.errs[0])
	}
	if u.c != good.c || w.Config() != good.c || w.Version() != "1" {
		t.Fatalf("the configuration in force changed: version %q", w.Version())
	}
	_, req := s.reqs.waitFor(t, 0, "NACK of response 2", nack(bad.GetNonce()))
	if req.GetVersionInfo() != "1" || req.GetErrorDetail().GetMessage() != `version "2" refused, the configuration of version "1" stays: `+why {
		t.Fatalf("NACK version %q detail %q", req.GetVersionInfo(), req.GetErrorDetail().GetMessage())
	}

	// The cache sends the refused response again at once; the client
	// waits before refusing it again.
	_, again := s.resps.waitFor(t, 0, "response 2 again", func(r *discoveryv3.DiscoveryResponse) bool {
		return r.GetVersionInfo() == "2" && r.GetNonce() != bad.GetNonce()
	})
	if _, d := waits.waitFor(t, 0, "wait before the second NACK", func(time.Duration) bool { return true }); d != 7*time.Millisecond {
		t.Fatalf("waited %v, want 7ms", d)
	}
	s.set("n", "3", rateLimit("foo", "foo", "k3", "v3", 9, rlsconfv3.RateLimitUnit_DAY))
	release <- struct{}{}
	s.reqs.waitFor(t, 0, "second NACK", nack(again.GetNonce()))
	_, u = ups.waitFor(t, at+1, "version 3", func(u update) bool { return u.c.Domain("foo") != nil && u.c != good.c })
	if u.errs != nil || limitOf(u.c, "foo", rlsconfig.Entry{Key: "k3", Value: "v3"}) != "9/day" {
		t.Fatalf("version 3: errors %v", u.errs)
	}
	s.reqs.waitFor(t, 0, "ACK of version 3", ack("3"))
	for _, r := range s.reqs.all() {
		if r.GetVersionInfo() == "2" {
			t.Errorf("version 2 acknowledged: %v", r)
		}
	}
	n := 0
	for _, u := range ups.all() {
		if u.errs != nil {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d reports of errors, want 1", n)
	}
}

// TestWatchReconnect stops the server under a client and starts it again
// on the same address, with a newer snapshot: the client reports the
// broken stream, keeps its configuration, reconnects and takes the newer
// one.
func TestWatchReconnect(t *testing.T) {
	s := startServer(t)
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	w, ups := watch(t, fastConfig(s, "n"), nil)
	at, good := ups.waitFor(t, 0, "version 1", func(u update) bool { return u.c.Domain("foo") != nil })
	s.reqs.waitFor(t, 0, "ACK of version 1", ack("1"))

	s.stop()
	at, u := ups.waitFor(t, at+1, "broken stream", func(u update) bool { return u.errs != nil })
	if msg := u.errs[0].Error(); !strings.HasPrefix(msg, "rlsxds: the stream from "+s.addr+" ended: ") || u.c != good.c {
		t.Fatalf("error %q; configuration kept: %v", msg, u.c == good.c)
	}
	s.set("n", "2", rateLimit("foo", "foo", "k2", "v2", 5, rlsconfv3.RateLimitUnit_HOUR))
	from := len(s.reqs.all())
	s.serve()
	_, u = ups.waitFor(t, at+1, "version 2", func(u update) bool { return u.errs == nil && u.c != good.c })
	if got := limitOf(u.c, "foo", rlsconfig.Entry{Key: "k2", Value: "v2"}); got != "5/hour" {
		t.Fatalf("foo k2=v2 %s, want 5/hour", got)
	}
	// The new stream's first request names the version in force.
	i, _ := s.reqs.waitFor(t, from, "ACK of version 2", ack("2"))
	reqs := s.reqs.all()
	if first := reqs[from]; first.GetVersionInfo() != "1" || first.GetResponseNonce() != "" || i <= from {
		t.Fatalf("first request after the restart: version %q nonce %q", first.GetVersionInfo(), first.GetResponseNonce())
	}
	if w.Version() != "2" {
		t.Fatalf("Version %q, want 2", w.Version())
	}
}

// TestWatchServerLate starts the client before the server: it reports
// that it cannot connect, and takes the configuration once the server is
// up.
func TestWatchServerLate(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	s := &xdsServer{addr: addr}
	cfg := fastConfig(s, "n")
	_, ups := watch(t, cfg, nil)
	_, u := ups.waitFor(t, 0, "connection error", func(u update) bool { return u.errs != nil })
	if len(u.c.Domains()) != 0 || !strings.Contains(u.errs[0].Error(), "rlsxds: the stream from "+addr+" ended: ") {
		t.Fatalf("%d domains; errors %v", len(u.c.Domains()), u.errs)
	}

	s = startServerAt(t, addr)
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	ups.waitFor(t, 0, "version 1", func(u update) bool { return u.errs == nil && u.c.Domain("foo") != nil })
}

// TestWatchCheck refuses, through Config.Check, a configuration that
// converts.
func TestWatchCheck(t *testing.T) {
	s := startServer(t)
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	cfg := fastConfig(s, "n")
	cfg.Check = func(c *rlsconfig.Config) error {
		if c.Domain("bar") != nil {
			return errors.New("no bar here")
		}
		return nil
	}
	_, ups := watch(t, cfg, nil)
	ups.waitFor(t, 0, "version 1", func(u update) bool { return u.c.Domain("foo") != nil })
	s.reqs.waitFor(t, 0, "ACK of version 1", ack("1"))
	s.set("n", "2", rateLimit("bar", "bar", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	_, resp := s.resps.waitFor(t, 0, "response 2", response("2"))
	_, req := s.reqs.waitFor(t, 0, "NACK of response 2", nack(resp.GetNonce()))
	if got := req.GetErrorDetail().GetMessage(); got != `version "2" refused, the configuration of version "1" stays: rlsxds: the configuration is refused: no bar here` {
		t.Fatalf("NACK detail %q", got)
	}
	_, u := ups.waitFor(t, 0, "refusal", func(u update) bool { return u.errs != nil })
	if u.c.Domain("foo") == nil || u.c.Domain("bar") != nil {
		t.Fatalf("the configuration in force changed")
	}
}

// TestWatchMaxRecvMsgSize refuses responses larger than MaxRecvMsgSize:
// the stream fails with gRPC's error, reported.
func TestWatchMaxRecvMsgSize(t *testing.T) {
	s := startServer(t)
	s.set("n", "1", rateLimit("foo", "foo", "k1", strings.Repeat("v", 200), 3, rlsconfv3.RateLimitUnit_MINUTE))
	cfg := fastConfig(s, "n")
	cfg.MaxRecvMsgSize = 100
	_, ups := watch(t, cfg, nil)
	_, u := ups.waitFor(t, 0, "stream error", func(u update) bool { return u.errs != nil })
	if msg := u.errs[0].Error(); !strings.Contains(msg, "ResourceExhausted") || len(u.c.Domains()) != 0 {
		t.Fatalf("error %q, %d domains", msg, len(u.c.Domains()))
	}
}

func TestWatchClose(t *testing.T) {
	s := startServer(t)
	w, err := Watch(context.Background(), fastConfig(s, "n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done is open after Close")
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	w, err = Watch(ctx, fastConfig(s, "n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-w.Done():
	case <-time.After(waitLimit):
		t.Fatal("the watch did not end with its context")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func startServerAt(t *testing.T, addr string) *xdsServer {
	t.Helper()
	s := newServer(t, addr)
	s.serve()
	return s
}

// slowListener accepts each connection after a delay, so that the server's
// first bytes come late.
type slowListener struct {
	net.Listener
	delay time.Duration
}

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		time.Sleep(l.delay) // a slow server, for real I/O
	}
	return c, err
}

// TestWatchSlowServer connects to a server that answers a connection
// later than ConnectRetryInterval: the attempt waits for it, and does not
// give up after the interval.
func TestWatchSlowServer(t *testing.T) {
	s := newServer(t, "127.0.0.1:0")
	s.wrap = func(l net.Listener) net.Listener { return slowListener{l, 50 * time.Millisecond} }
	s.serve()
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	cfg := fastConfig(s, "n") // dials every 5 ms
	_, ups := watch(t, cfg, nil)
	ups.waitFor(t, 0, "version 1", func(u update) bool { return u.errs == nil && u.c.Domain("foo") != nil })
}
