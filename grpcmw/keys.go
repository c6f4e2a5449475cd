package grpcmw

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/floodgate/floodgate/internal/clientip"
)

// IPOption configures [KeyByPeerIP]. keyfunc's client-IP options
// (keyfunc.WithTrustedProxies, WithHeader, WithPrefixes) are IPOptions:
// the type is keyfunc.Option, named here too because grpcmw does not
// import keyfunc, whose key functions take an *http.Request.
type IPOption = clientip.Option

// KeyByPeerIP keys by the client's IP address with keyfunc.ClientIP's
// rules and options, such as keyfunc.WithTrustedProxies (see
// [IPOption]). By default the key is the connection's peer address
// and no metadata is read. With keyfunc.WithTrustedProxies, a call whose
// peer is a trusted gateway (an Envoy, a grpc-gateway, a load balancer) is
// keyed by the client address in the gateway's proxy header, read from the
// incoming metadata of the same name in lower case (x-forwarded-for by
// default; keyfunc.WithHeader picks another), walked right to left past the
// trusted hops as for HTTP. Each metadata value counts as one header line.
//
// A call without a peer, or whose peer is not an IP address (a Unix socket,
// an in-memory bufconn listener), is an error matching
// keyfunc.ErrInvalidRemoteAddr. KeyByPeerIP returns an error, starting
// with "keyfunc: ", for invalid options.
func KeyByPeerIP(opts ...IPOption) (KeyFunc, error) {
	res, err := clientip.New(opts...)
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(res.Header())
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", fmt.Errorf("%w: no peer in the call's context", clientip.ErrInvalidRemoteAddr)
		}
		var addr string
		if tcp, ok := p.Addr.(*net.TCPAddr); ok {
			// One allocation, where net.TCPAddr.String makes several. A
			// 16-byte IPv4 address is written as IPv4, so that its text
			// can be the key as it is, with no second allocation.
			ap := tcp.AddrPort()
			if a := ap.Addr(); a.Is4In6() {
				ap = netip.AddrPortFrom(a.Unmap(), ap.Port())
			}
			var buf [64]byte
			addr = string(ap.AppendTo(buf[:0]))
		} else {
			addr = p.Addr.String()
		}
		var vals []string
		if name != "" {
			vals = metadata.ValueFromIncomingContext(ctx, name)
		}
		return res.Resolve(addr, vals)
	}, nil
}

// MustKeyByPeerIP is like KeyByPeerIP but panics on invalid options, for
// package-level variables.
func MustKeyByPeerIP(opts ...IPOption) KeyFunc {
	f, err := KeyByPeerIP(opts...)
	if err != nil {
		panic(err)
	}
	return f
}

// KeyByMetadata keys by the first value of the named incoming metadata,
// such as an API key or a tenant ID. The name is matched in lower case, as
// gRPC metadata keys are. A missing or empty value is an error matching
// keyfunc.ErrNoKey; one longer than 4096 bytes is an error matching
// core.ErrKeyTooLarge.
//
// KeyByMetadata panics if name is not a valid metadata key, as that is a
// programming error best found at startup.
func KeyByMetadata(name string) KeyFunc {
	key := strings.ToLower(name)
	if key == "" {
		panic("grpcmw: KeyByMetadata needs a metadata key")
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			panic(fmt.Sprintf("grpcmw: KeyByMetadata: %q is not a valid metadata key (want [0-9a-z-_.])", name))
		}
	}
	return func(ctx context.Context, _ string) (string, error) {
		vs := metadata.ValueFromIncomingContext(ctx, key)
		if len(vs) == 0 || vs[0] == "" {
			return "", fmt.Errorf("%w: metadata %s is missing or empty", clientip.ErrNoKey, key)
		}
		if len(vs[0]) > clientip.MaxKeyLen {
			return "", fmt.Errorf("%w: metadata %s is %d bytes, more than %d", clientip.ErrTooLarge, key, len(vs[0]), clientip.MaxKeyLen)
		}
		return vs[0], nil
	}
}

// KeyByMethod keys by the full method name ("/package.Service/Method"):
// each method gets one limit shared by all its callers. Join it with
// another key function for per-caller, per-method limits. An empty method
// is an error matching keyfunc.ErrNoKey.
func KeyByMethod() KeyFunc {
	return keyByMethod
}

func keyByMethod(_ context.Context, fullMethod string) (string, error) {
	if fullMethod == "" {
		return "", fmt.Errorf("%w: empty method name", clientip.ErrNoKey)
	}
	return fullMethod, nil
}

// Constant puts every call in one bucket named key: a global limit.
// Constant panics if key is empty, since an empty key is never valid.
func Constant(key string) KeyFunc {
	if key == "" {
		panic("grpcmw: Constant needs a non-empty key")
	}
	return func(context.Context, string) (string, error) { return key, nil }
}

// JoinKeys keys by several key functions at once, such as peer IP and
// method, in keyfunc.Join's encoding, so no choice
// of parts can forge another combination. The first error from any part is
// returned, and an empty part is an error matching keyfunc.ErrNoKey.
//
// JoinKeys panics if given no functions or a nil one.
func JoinKeys(fns ...KeyFunc) KeyFunc {
	parts := make([]func(call) (string, error), len(fns))
	for i, fn := range fns {
		if fn != nil { // a nil one stays nil, and JoinFuncs names it
			parts[i] = func(c call) (string, error) { return fn(c.ctx, c.method) }
		}
	}
	join := clientip.JoinFuncs("grpcmw.JoinKeys", parts...)
	return func(ctx context.Context, fullMethod string) (string, error) {
		return join(call{ctx, fullMethod})
	}
}
