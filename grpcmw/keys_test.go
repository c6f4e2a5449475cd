package grpcmw_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// namedAddr is a net.Addr that is not an IP address, like bufconn's.
type namedAddr string

func (a namedAddr) Network() string { return string(a) }
func (a namedAddr) String() string  { return string(a) }

func peerCtx(addr net.Addr, kv ...string) context.Context {
	ctx := context.Background()
	if addr != nil {
		ctx = peer.NewContext(ctx, &peer.Peer{Addr: addr})
	}
	if len(kv) > 0 {
		ctx = metadata.NewIncomingContext(ctx, metadata.Pairs(kv...))
	}
	return ctx
}

func tcp(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestKeyFuncs(t *testing.T) {
	t.Parallel()
	byPeer := grpcmw.MustKeyByPeerIP()
	behindGateway := grpcmw.MustKeyByPeerIP(keyfunc.WithTrustedProxies("10.0.0.0/8"))
	byForwarded := grpcmw.MustKeyByPeerIP(keyfunc.WithTrustedProxies("10.0.0.0/8"), keyfunc.WithHeader("Forwarded"))
	byAPIKey := grpcmw.KeyByMetadata("X-API-Key")
	long := strings.Repeat("k", 4096+1)
	tests := []struct {
		name    string
		fn      grpcmw.KeyFunc
		ctx     context.Context
		method  string
		want    string
		wantErr error
	}{
		{"peer ipv4", byPeer, peerCtx(tcp("192.0.2.1:5000")), mCheck, "192.0.2.1", nil},
		{"peer ipv6 by /64", byPeer, peerCtx(tcp("[2001:db8:1:2::7]:5000")), mCheck, "2001:db8:1:2::/64", nil},
		{"peer v4-mapped", byPeer, peerCtx(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 1}), mCheck, "192.0.2.1", nil},
		{"peer ignores metadata", byPeer, peerCtx(tcp("192.0.2.1:5000"), "x-forwarded-for", "203.0.113.7"), mCheck, "192.0.2.1", nil},
		{"udp-like peer", byPeer, peerCtx(&net.UDPAddr{IP: net.ParseIP("192.0.2.3"), Port: 9}), mCheck, "192.0.2.3", nil},
		{"no peer", byPeer, context.Background(), mCheck, "", keyfunc.ErrInvalidRemoteAddr},
		{"bufconn peer", byPeer, peerCtx(namedAddr("bufconn")), mCheck, "", keyfunc.ErrInvalidRemoteAddr},
		{"unix peer", byPeer, peerCtx(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}), mCheck, "", keyfunc.ErrInvalidRemoteAddr},
		{"gateway", behindGateway, peerCtx(tcp("10.0.0.1:5000"), "x-forwarded-for", "6.6.6.6, 203.0.113.7, 10.0.0.2"), mCheck, "203.0.113.7", nil},
		{"gateway, lines in order", behindGateway, peerCtx(tcp("10.0.0.1:5000"), "x-forwarded-for", "203.0.113.7", "x-forwarded-for", "10.0.0.3"), mCheck, "203.0.113.7", nil},
		{"gateway, bad hop", behindGateway, peerCtx(tcp("10.0.0.1:5000"), "x-forwarded-for", "203.0.113.7, _hidden"), mCheck, "", keyfunc.ErrInvalidHeader},
		{"not a gateway", behindGateway, peerCtx(tcp("198.51.100.1:5000"), "x-forwarded-for", "203.0.113.7"), mCheck, "198.51.100.1", nil},
		{"forwarded", byForwarded, peerCtx(tcp("10.0.0.1:5000"), "forwarded", `for="[2001:db8:1:2::9]:80"`), mCheck, "2001:db8:1:2::/64", nil},
		{"metadata", byAPIKey, peerCtx(nil, "x-api-key", "k1", "x-api-key", "k2"), mCheck, "k1", nil},
		{"metadata missing", byAPIKey, peerCtx(nil, "other", "x"), mCheck, "", keyfunc.ErrNoKey},
		{"metadata empty", byAPIKey, peerCtx(nil, "x-api-key", ""), mCheck, "", keyfunc.ErrNoKey},
		{"metadata too long", byAPIKey, peerCtx(nil, "x-api-key", long), mCheck, "", core.ErrKeyTooLarge},
		{"no metadata", byAPIKey, context.Background(), mCheck, "", keyfunc.ErrNoKey},
		{"method", grpcmw.KeyByMethod(), context.Background(), mCheck, mCheck, nil},
		{"empty method", grpcmw.KeyByMethod(), context.Background(), "", "", keyfunc.ErrNoKey},
		{"constant", grpcmw.Constant("global"), context.Background(), mCheck, "global", nil},
		{"join", grpcmw.JoinKeys(byPeer, grpcmw.KeyByMethod()), peerCtx(tcp("192.0.2.1:5000")), mCheck, "9:192.0.2.1" + "28:" + mCheck, nil},
		{"join error", grpcmw.JoinKeys(grpcmw.KeyByMethod(), byAPIKey), context.Background(), mCheck, "", keyfunc.ErrNoKey},
		{"join empty part", grpcmw.JoinKeys(grpcmw.Constant("a"), func(context.Context, string) (string, error) { return "", nil }), context.Background(), mCheck, "", keyfunc.ErrNoKey},
		{"join many", grpcmw.JoinKeys(grpcmw.Constant("a"), grpcmw.Constant("b"), grpcmw.Constant("c"), grpcmw.Constant("d"), grpcmw.Constant("e:f")), context.Background(), mCheck, "1:a1:b1:c1:d3:e:f", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.fn(tc.ctx, tc.method)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != "" {
					t.Fatalf("= %q, %v; want error matching %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestKeyFuncPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"empty metadata key":   func() { grpcmw.KeyByMetadata("") },
		"invalid metadata key": func() { grpcmw.KeyByMetadata("x key") },
		"empty constant":       func() { grpcmw.Constant("") },
		"join nothing":         func() { grpcmw.JoinKeys() },
		"join nil":             func() { grpcmw.JoinKeys(grpcmw.KeyByMethod(), nil) },
		"must peer ip":         func() { grpcmw.MustKeyByPeerIP(keyfunc.WithTrustedProxies("nonsense")) },
		"must new":             func() { grpcmw.MustNew(nil, grpcmw.KeyByMethod()) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestKeyByPeerIPAllocs(t *testing.T) {
	fn := grpcmw.MustKeyByPeerIP()
	ctx := peerCtx(tcp("192.0.2.1:5000"))
	if n := testing.AllocsPerRun(200, func() { _, _ = fn(ctx, mCheck) }); n > 1 {
		t.Errorf("KeyByPeerIP allocates %v times per call, want at most 1", n)
	}
}
