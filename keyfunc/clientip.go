package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
)

// Bounds on how much of a proxy header ClientIP examines before giving up.
// The walk stops at the first untrusted address, so only a long run of
// trusted hops (or, for Forwarded, a long line holding the client) comes
// near them; real proxy chains are a handful of hops.
const (
	// maxItems counts list items, empty ones included, across all lines.
	maxItems = 64
	// maxHeaderBytes counts the header bytes examined across all lines.
	maxHeaderBytes = 8 << 10
)

// clientIP is the resolved configuration. It is kept apart from the
// *http.Request so that other transports (gRPC peers and metadata) can feed
// the same walk with a peer address and header values.
type clientIP struct {
	trusted []netip.Prefix
	header  string
	kind    headerKind
	v4Bits  int
	v6Bits  int
}

func newClientIP(opts []Option) (*clientIP, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	if o.named != "" && len(o.trusted) == 0 {
		// Headers are read only from trusted peers, so this configuration
		// would silently key by the socket peer: behind a proxy, every
		// client would share the proxy's bucket.
		return nil, fmt.Errorf("keyfunc: WithHeader(%q) has no effect without WithTrustedProxies: "+
			"add WithTrustedProxies with your proxies' ranges, or drop WithHeader to key by the socket peer", o.named)
	}
	return &clientIP{
		trusted: o.trusted,
		header:  o.header,
		kind:    o.kind,
		v4Bits:  o.v4Bits,
		v6Bits:  o.v6Bits,
	}, nil
}

// ClientIP keys by the client's IP address.
//
// By default the key is the socket peer (http.Request.RemoteAddr) and no
// header is read: headers are written by the client, so trusting them
// from anyone lets every request pick a fresh key. With WithTrustedProxies,
// a request whose peer is a trusted proxy is keyed by the proxy header
// (WithHeader, default X-Forwarded-For), read as follows:
//
//   - every line of the header counts, in order, as one list;
//   - the list is walked right to left and trusted addresses are skipped;
//     the first untrusted address is the client;
//   - if every address is trusted, the leftmost is the client; a trusted
//     peer that sent no header is itself the client;
//   - a malformed item, "unknown", or an obfuscated identifier ("_hidden")
//     reached before the client is an error matching ErrInvalidHeader,
//     never the proxy's own address;
//   - ports, brackets, IPv6 zones and surrounding spaces are stripped, and
//     IPv4-mapped IPv6 addresses count as IPv4;
//   - a walk that passes 64 items or 8 KiB without finding the client
//     stops with an error matching ErrTooLarge.
//
// An IPv4 key is the dotted quad ("203.0.113.7"), or the masked network
// in CIDR form when WithIPv4Prefix is below 32. An IPv6 key is the masked
// prefix in canonical form ("2001:db8:1:2::/64", see WithIPv6Prefix). A
// RemoteAddr that is not an IP address (a Unix socket) is an error matching
// ErrInvalidRemoteAddr.
//
// ClientIP returns an error, starting with "keyfunc: ", for invalid
// options, and for WithHeader without WithTrustedProxies (which would read
// nothing).
func ClientIP(opts ...Option) (Func, error) {
	res, err := NewIPResolver(opts...)
	if err != nil {
		return nil, err
	}
	if len(res.c.trusted) == 0 {
		// No proxy is trusted, so no header is read: skip the lookup.
		return func(r *http.Request) (string, error) {
			return res.Resolve(r.RemoteAddr, nil)
		}, nil
	}
	return func(r *http.Request) (string, error) {
		return res.Resolve(r.RemoteAddr, r.Header[res.c.header])
	}, nil
}

// IPResolver is ClientIP's address logic apart from *http.Request, for
// transports that carry the peer address and the proxy header some other way,
// such as gRPC (the peer from the connection, the header from metadata).
// It applies the same options, in the same way, with the same errors.
//
// An IPResolver is safe for concurrent use. Make one with NewIPResolver.
type IPResolver struct {
	c *clientIP
}

// NewIPResolver returns an IPResolver configured by opts, which mean what
// they mean for ClientIP. It returns an error, starting with "keyfunc: ",
// for invalid options, and for WithHeader without WithTrustedProxies.
func NewIPResolver(opts ...Option) (*IPResolver, error) {
	c, err := newClientIP(opts)
	if err != nil {
		return nil, err
	}
	return &IPResolver{c: c}, nil
}

// Resolve returns the key of the client behind peerAddr, exactly as ClientIP
// does for a request with RemoteAddr peerAddr and the configured proxy header
// holding headerValues, one value per header line in the order received.
// peerAddr is "ip:port", "[ipv6]:port" or a bare address. headerValues is
// ignored unless peerAddr is a trusted proxy.
func (r *IPResolver) Resolve(peerAddr string, headerValues []string) (string, error) {
	if len(r.c.trusted) == 0 {
		return r.c.peerKey(peerAddr)
	}
	return r.c.key(peerAddr, headerValues)
}

// Header returns the name of the proxy header Resolve reads, in canonical
// form ("X-Forwarded-For"), or "" when no proxy is trusted and so no header
// is ever read. Transports with lower-case field names, such as gRPC
// metadata, look it up lower-cased.
func (r *IPResolver) Header() string {
	if len(r.c.trusted) == 0 {
		return ""
	}
	return r.c.header
}

// MustClientIP is like ClientIP but panics on invalid options, for
// package-level variables.
func MustClientIP(opts ...Option) Func {
	f, err := ClientIP(opts...)
	if err != nil {
		panic(err)
	}
	return f
}
