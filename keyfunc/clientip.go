package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
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

// peerKey keys by the socket peer alone.
func (c *clientIP) peerKey(remote string) (string, error) {
	a, host, err := parsePeer(remote)
	if err != nil {
		return "", err
	}
	return c.peerFormat(a, host), nil
}

// key resolves the client from the socket peer and the values of the
// configured header, one per header line.
func (c *clientIP) key(remote string, values []string) (string, error) {
	peer, host, err := parsePeer(remote)
	if err != nil {
		return "", err
	}
	if len(values) == 0 || !c.isTrusted(peer) {
		return c.peerFormat(peer, host), nil
	}
	var (
		a     netip.Addr
		found bool
	)
	if c.kind == kindForwarded {
		a, found, err = c.walkForwarded(values)
	} else {
		a, found, err = c.walkList(values)
	}
	if err != nil {
		return "", err
	}
	if !found {
		return c.peerFormat(peer, host), nil
	}
	return c.format(a), nil
}

func (c *clientIP) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// walkList walks X-Forwarded-For style lists and X-Real-IP. It reports
// found=false when the header holds no items at all.
func (c *clientIP) walkList(values []string) (netip.Addr, bool, error) {
	var leftmost netip.Addr
	found := false
	items, budget, hop := 0, maxHeaderBytes, 0
	for li := len(values) - 1; li >= 0; li-- {
		line := values[li]
		for {
			// Cut the last item off the line. The comma search only looks
			// at as many bytes as the budget has left, so one enormous item
			// costs no more than a small one.
			j := -1
			if c.kind == kindList {
				start := len(line) - budget - 1
				if start < 0 {
					start = 0
				}
				j = strings.LastIndexByte(line[start:], ',')
				if j >= 0 {
					j += start
				}
			}
			item := line[j+1:]
			items++
			if items > maxItems || len(item) > budget {
				return netip.Addr{}, false, c.tooLarge()
			}
			budget -= len(item)
			item = trimOWS(item)
			if item != "" {
				hop++
				a, st := parseNode(item, false)
				if st != nodeOK {
					return netip.Addr{}, false, c.badHop(hop, item, st)
				}
				if !c.isTrusted(a) {
					return a, true, nil
				}
				leftmost, found = a, true
			}
			if j < 0 {
				break
			}
			line = line[:j]
		}
	}
	return leftmost, found, nil
}

// walkForwarded walks RFC 7239 Forwarded lines. A line is parsed whole
// before its elements are walked: a stray quote on the left changes where
// every element to its right begins, so a line that is not valid syntax as
// a whole cannot be trusted in part.
func (c *clientIP) walkForwarded(values []string) (netip.Addr, bool, error) {
	var (
		elems    [maxItems]fwdElem
		leftmost netip.Addr
	)
	found := false
	items, budget, hop := 0, maxHeaderBytes, 0
	for li := len(values) - 1; li >= 0; li-- {
		line := values[li]
		if len(line) > budget {
			return netip.Addr{}, false, c.tooLarge()
		}
		budget -= len(line)
		n, errAt, overflow := parseForwarded(line, elems[:maxItems-items])
		if overflow {
			return netip.Addr{}, false, c.tooLarge()
		}
		if errAt >= 0 {
			return netip.Addr{}, false, fmt.Errorf("%w: %s: line %d from the right is not valid RFC 7239 syntax at byte %d",
				ErrInvalidHeader, c.header, len(values)-li, errAt)
		}
		items += n
		for k := n - 1; k >= 0; k-- {
			e := &elems[k]
			if e.flags&fwdEmpty != 0 {
				continue
			}
			hop++
			switch {
			case e.flags&fwdHasFor == 0:
				return netip.Addr{}, false, fmt.Errorf("%w: %s: hop %d from the right has no for= parameter",
					ErrInvalidHeader, c.header, hop)
			case e.flags&fwdDupFor != 0:
				return netip.Addr{}, false, fmt.Errorf("%w: %s: hop %d from the right has more than one for= parameter",
					ErrInvalidHeader, c.header, hop)
			}
			node := line[e.start:e.end]
			if e.flags&fwdEscaped != 0 {
				node = unescapeQuoted(node)
			}
			a, st := parseNode(node, true)
			if st != nodeOK {
				return netip.Addr{}, false, c.badHop(hop, node, st)
			}
			if !c.isTrusted(a) {
				return a, true, nil
			}
			leftmost, found = a, true
		}
	}
	return leftmost, found, nil
}

func (c *clientIP) tooLarge() error {
	return fmt.Errorf("%w: %s has more than %d items or %d bytes before the client address",
		ErrTooLarge, c.header, maxItems, maxHeaderBytes)
}

func (c *clientIP) badHop(hop int, item string, st nodeStatus) error {
	var what string
	switch st {
	case nodeUnknown:
		what = `"unknown": a proxy could not tell who connected to it`
	case nodeObfuscated:
		what = "an obfuscated identifier, not an address"
	default:
		what = "not an IP address"
	}
	return fmt.Errorf("%w: %s: hop %d from the right, %.*q, is %s",
		ErrInvalidHeader, c.header, hop, quoteMax, item, what)
}

// format turns a client address (already unmapped, without zone) into its
// key. The 64-byte buffer fits the longest form, a full IPv6 prefix.
func (c *clientIP) format(a netip.Addr) string {
	var buf [64]byte
	if a.Is4() {
		if c.v4Bits == 32 {
			return string(a.AppendTo(buf[:0]))
		}
		p, _ := a.Prefix(c.v4Bits)
		return string(p.AppendTo(buf[:0]))
	}
	p, _ := a.Prefix(c.v6Bits)
	return string(appendKey6(buf[:0], p))
}

// peerFormat is format for the socket peer. netip accepts IPv4 only in
// canonical dotted-quad form, so when the peer was written as a plain IPv4
// address the text from RemoteAddr already is the key and costs no
// allocation. (Header text is never reused this way: a short key would
// keep the whole header alive in the store.)
func (c *clientIP) peerFormat(a netip.Addr, host string) string {
	if host != "" && c.v4Bits == 32 {
		return host
	}
	return c.format(a)
}

// parsePeer parses RemoteAddr: "ip:port", "[ipv6]:port" or a bare address.
// host is the address text when it is a plain IPv4 address, else "".
func parsePeer(remote string) (a netip.Addr, host string, err error) {
	// Fast path for the usual "a.b.c.d:port".
	if ip, n, ok := parseIPv4Prefix(remote); ok {
		if n == len(remote) || remote[n] == ':' && validPort(remote[n+1:], false) {
			return netip.AddrFrom4(ip), remote[:n], nil
		}
	} else if h, ok := splitNode(remote, false); ok {
		if a, st := parseHost(h); st == nodeOK {
			if a.Is4() && strings.IndexByte(h, ':') < 0 {
				host = h
			}
			return a, host, nil
		}
	}
	return netip.Addr{}, "", fmt.Errorf("%w: %.*q", ErrInvalidRemoteAddr, quoteMax, remote)
}

type nodeStatus uint8

const (
	nodeOK nodeStatus = iota
	nodeMalformed
	nodeUnknown
	nodeObfuscated
)

// parseNode parses one hop: an address with optional port, brackets and
// IPv6 zone. obfPort admits RFC 7239 obfuscated ports ("_abc"), which still
// leave a usable address. Only a failed parse is classified further, so
// the common case pays for nothing but the parse.
func parseNode(s string, obfPort bool) (netip.Addr, nodeStatus) {
	if ip, n, ok := parseIPv4Prefix(s); ok {
		if n == len(s) || s[n] == ':' && validPort(s[n+1:], obfPort) {
			return netip.AddrFrom4(ip), nodeOK
		}
		return netip.Addr{}, nodeMalformed
	}
	if h, ok := splitNode(s, obfPort); ok {
		if a, st := parseHost(h); st == nodeOK {
			return a, st
		}
	}
	switch {
	case s != "" && s[0] == '_':
		return netip.Addr{}, nodeObfuscated
	case len(s) >= 7 && strings.EqualFold(s[:7], "unknown") && (len(s) == 7 || s[7] == ':'):
		return netip.Addr{}, nodeUnknown
	}
	return netip.Addr{}, nodeMalformed
}

// parseHost parses an address without port or brackets, dropping an IPv6
// zone (it names an interface on the proxy, not a different client) and
// unmapping IPv4-mapped IPv6 so one IPv4 client has one key.
func parseHost(h string) (netip.Addr, nodeStatus) {
	if strings.IndexByte(h, ':') < 0 {
		if ip, n, ok := parseIPv4Prefix(h); ok && n == len(h) {
			return netip.AddrFrom4(ip), nodeOK
		}
		return netip.Addr{}, nodeMalformed
	}
	if i := strings.IndexByte(h, '%'); i >= 0 {
		if i == len(h)-1 {
			return netip.Addr{}, nodeMalformed
		}
		h = h[:i]
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, nodeMalformed
	}
	return a.Unmap(), nodeOK
}

// splitNode strips brackets and port. Brackets must wrap an IPv6 address;
// a single colon means an IPv4 address with a port; more colons mean a
// bare IPv6 address, which cannot carry a port unbracketed.
func splitNode(s string, obfPort bool) (host string, ok bool) {
	if s == "" {
		return "", false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", false
		}
		host, rest := s[1:end], s[end+1:]
		if rest != "" && (rest[0] != ':' || !validPort(rest[1:], obfPort)) {
			return "", false
		}
		if strings.IndexByte(host, ':') < 0 {
			return "", false
		}
		return host, true
	}
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return s, true
	}
	if strings.IndexByte(s[i+1:], ':') >= 0 {
		return s, true
	}
	if !validPort(s[i+1:], obfPort) {
		return "", false
	}
	return s[:i], true
}

func validPort(p string, obf bool) bool {
	if obf && len(p) >= 2 && p[0] == '_' {
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	if len(p) == 0 || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= 65535
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
