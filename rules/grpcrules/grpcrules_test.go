package grpcrules

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/rules"
)

const file = `rules:
  - name: query
    match: {grpc: ["/pkg.Search/Query"]}
    limit: 2/min
  - name: index
    match: {grpc: ["/pkg.Index/*"]}
    limit: 5/min
    cost: 2
    key: header:X-Tenant
  - name: web
    match: {paths: ["/*"]}
    limit: 1/min
`

func peerCtx() context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4000}})
}

// calls makes n unary calls and returns their codes, joined.
func calls(ic *Interceptors, ctx context.Context, method string, n int) string {
	var out []string
	h := func(context.Context, any) (any, error) { return "ok", nil }
	for range n {
		_, err := ic.UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: method}, h)
		out = append(out, status.Code(err).String())
	}
	return strings.Join(out, " ")
}

func newSet(t *testing.T) *rules.Set {
	t.Helper()
	clock := coretest.NewClock(time.Unix(1_700_000_000, 0))
	s, err := rules.New("r.yaml", []byte(file), rules.WithCoreOptions(core.WithClock(clock)),
		rules.WithOnReload(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestUnary(t *testing.T) {
	s := newSet(t)
	ic, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls(ic, peerCtx(), "/pkg.Search/Query", 3); got != "OK OK ResourceExhausted" {
		t.Errorf("Query: %s", got)
	}
	if got := calls(ic, peerCtx(), "/pkg.Search/Other", 3); got != "OK OK OK" {
		t.Errorf("an unmatched method: %s", got)
	}
	if got := calls(ic, peerCtx(), "/pkg.Index/Add", 1); got != "InvalidArgument" {
		t.Errorf("Index without x-tenant: %s", got)
	}
	tenant := metadata.NewIncomingContext(peerCtx(), metadata.Pairs("x-tenant", "t1"))
	if got := calls(ic, tenant, "/pkg.Index/Add", 3); got != "OK OK ResourceExhausted" {
		t.Errorf("Index at cost 2 of 5: %s", got)
	}

	// Query unchanged, Index raised: Query keeps its count.
	if err := s.Apply([]byte(strings.Replace(file, "5/min", "50/min", 1))); err != nil {
		t.Fatal(err)
	}
	if got := calls(ic, peerCtx(), "/pkg.Search/Query", 1); got != "ResourceExhausted" {
		t.Errorf("Query after reload: %s", got)
	}
	if got := calls(ic, tenant, "/pkg.Index/Add", 1); got != "OK" {
		t.Errorf("Index after reload: %s", got)
	}

	// A key this package does not know: the file is rejected, the rules stay.
	before := s.Table()
	err = s.Apply([]byte(strings.Replace(file, "key: header:X-Tenant", "key: tenant", 1)))
	if err == nil || !strings.Contains(err.Error(), `grpcrules: rules[1] (index, line 5): unknown gRPC key "tenant"; the built-in keys are ip, header:NAME, method and global, and grpcrules.WithKey registered none`) {
		t.Errorf("Apply with an unknown gRPC key: %v", err)
	}
	if s.Table() != before {
		t.Error("a rejected file replaced the rules")
	}
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f fakeStream) Context() context.Context     { return f.ctx }
func (f fakeStream) SetHeader(metadata.MD) error  { return nil }
func (f fakeStream) SendHeader(metadata.MD) error { return nil }
func (f fakeStream) SetTrailer(metadata.MD)       {}

func TestStream(t *testing.T) {
	ic, err := New(newSet(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		err := ic.StreamServerInterceptor()(nil, fakeStream{ctx: peerCtx()}, &grpc.StreamServerInfo{FullMethod: "/pkg.Search/Query"},
			func(any, grpc.ServerStream) error { return nil })
		got = append(got, status.Code(err).String())
	}
	if s := strings.Join(got, " "); s != "OK OK ResourceExhausted" {
		t.Errorf("streams: %s", s)
	}
	err = ic.StreamServerInterceptor()(nil, fakeStream{ctx: peerCtx()}, &grpc.StreamServerInfo{FullMethod: "/pkg.Other/M"},
		func(any, grpc.ServerStream) error { return status.Error(codes.Aborted, "handler ran") })
	if status.Code(err) != codes.Aborted {
		t.Errorf("unmatched stream: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil): no error")
	}
	if _, err := New(newSet(t), WithKey("ip", nil)); err == nil || !strings.HasPrefix(err.Error(), "grpcrules: ") {
		t.Errorf("New with a bad option: %v", err)
	}
	s, err := rules.New("r.yaml", []byte("rules:\n  - name: a\n    match: {grpc: ['*']}\n    limit: 1/s\n    key: tenant\n"),
		rules.WithOnReload(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "tenant") {
		t.Errorf("New on rules with an unknown key: %v", err)
	}
	ic, err := New(s, WithKey("tenant", func(context.Context, string) (string, error) { return "t", nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got := calls(ic, context.Background(), "/x.Y/Z", 2); got != "OK ResourceExhausted" {
		t.Errorf("custom key: %s", got)
	}
}

// TestKeyIPReplaced: a key registered as "ip" replaces the peer address,
// as behind a gateway: two peers that the replacement keys alike share
// the Query rule's quota.
func TestKeyIPReplaced(t *testing.T) {
	ic, err := New(newSet(t), WithKey("ip", func(context.Context, string) (string, error) { return "gateway", nil }))
	if err != nil {
		t.Fatal(err)
	}
	other := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP("198.51.100.9"), Port: 1}})
	if got := calls(ic, peerCtx(), "/pkg.Search/Query", 2) + " " + calls(ic, other, "/pkg.Search/Query", 1); got != "OK OK ResourceExhausted" {
		t.Errorf("Query from two peers keyed alike: %s", got)
	}
}
