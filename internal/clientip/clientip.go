// Package clientip is the client-address logic keyfunc.ClientIP and
// grpcmw.KeyByPeerIP share, apart from any request type: the socket peer
// and a trusted proxy's header values go in, a key comes out, with the
// rules keyfunc.ClientIP documents. It also holds what the HTTP and gRPC
// key functions share besides: the errors their keys fail with, the bound
// on a key's length, and Join's encoding.
package clientip

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/floodgate/floodgate/core"
)

// MaxKeyLen bounds the keys the key functions take from a request. Keys
// are kept in the limiter's store, which bounds the number of entries, not
// their size; without a cap a client could make each entry as large as
// its request headers.
const MaxKeyLen = 4096

// The errors keyfunc exports under the same names (ErrTooLarge matches
// core.ErrKeyTooLarge, which callers test for).
var (
	// ErrNoKey: the request carries nothing to key on. It matches
	// core.ErrBadKey.
	ErrNoKey error = &keyError{"keyfunc: no key in request", core.ErrBadKey}
	// ErrInvalidRemoteAddr: the socket peer is not an IP address.
	ErrInvalidRemoteAddr = errors.New("keyfunc: remote address is not an IP")
	// ErrInvalidHeader: a trusted proxy's header does not identify the
	// client. It matches core.ErrBadKey.
	ErrInvalidHeader error = &keyError{"keyfunc: proxy header does not identify the client", core.ErrBadKey}
	// ErrTooLarge: a request value exceeds what a key function examines
	// or keeps. It matches core.ErrKeyTooLarge.
	ErrTooLarge error = &keyError{"keyfunc: request value too large", core.ErrKeyTooLarge}
)

// keyError is a sentinel with its own text that also matches a core error
// class, so adapters classify it without knowing this package.
type keyError struct {
	msg   string
	class error
}

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return e.class }

// QuoteMax is how many runes of request data an error message quotes, so
// errors (which end up in logs) never carry unbounded attacker bytes.
const QuoteMax = 32

// quoteMax is QuoteMax, as the parsers spell it.
const quoteMax = QuoteMax

// Bounds on how much of a proxy header a Resolver examines before giving
// up. The walk stops at the first untrusted address, so only a long run of
// trusted hops (or, for Forwarded, a long line holding the client) comes
// near them; real proxy chains are a handful of hops.
const (
	// maxItems counts list items, empty ones included, across all lines.
	maxItems = 64
	// maxHeaderBytes counts the header bytes examined across all lines.
	maxHeaderBytes = 8 << 10
)

// clientIP is the resolved configuration.
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

// Resolver finds the key of the client behind a peer address and a
// trusted proxy's header values. It is safe for concurrent use.
type Resolver struct {
	c *clientIP
}

// New returns a Resolver configured by opts. It returns an error,
// starting with "keyfunc: ", for invalid options, and for WithHeader
// without WithTrustedProxies (which would read nothing).
func New(opts ...Option) (*Resolver, error) {
	c, err := newClientIP(opts)
	if err != nil {
		return nil, err
	}
	return &Resolver{c: c}, nil
}

// Resolve returns the key of the client behind peerAddr, the configured
// proxy header holding headerValues, one value per header line in the
// order received. peerAddr is "ip:port", "[ipv6]:port" or a bare address.
// headerValues is ignored unless peerAddr is a trusted proxy.
func (r *Resolver) Resolve(peerAddr string, headerValues []string) (string, error) {
	if len(r.c.trusted) == 0 {
		return r.c.peerKey(peerAddr)
	}
	return r.c.key(peerAddr, headerValues)
}

// Header returns the name of the proxy header Resolve reads, in canonical
// form ("X-Forwarded-For"), or "" when no proxy is trusted and so no
// header is ever read.
func (r *Resolver) Header() string {
	if len(r.c.trusted) == 0 {
		return ""
	}
	return r.c.header
}
