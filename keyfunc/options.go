package keyfunc

import "github.com/floodgate/floodgate/internal/clientip"

// Option configures ClientIP. grpcmw.KeyByPeerIP takes the same options,
// with the same meaning.
type Option = clientip.Option

// WithTrustedProxies lists the proxies whose forwarding header is believed.
// Each entry is a CIDR range ("10.0.0.0/8", "2001:db8::/32") or a bare
// address, which means that one address (/32 or /128). Host bits in a range
// are ignored. IPv4-mapped IPv6 entries ("::ffff:10.0.0.0/104") are treated
// as the IPv4 range they map. Calls accumulate.
//
// Without this option no proxy is trusted and the key is the socket peer,
// whatever headers the request carries. A range that covers every address
// (/0) is refused: it would let any client choose its own key.
func WithTrustedProxies(cidrs ...string) Option { return clientip.WithTrustedProxies(cidrs...) }

// WithHeader names the one proxy header ClientIP reads from trusted peers.
// The default is X-Forwarded-For. "Forwarded" selects the RFC 7239 parser
// (for= parameters); "X-Real-IP" expects exactly one address per header
// line; any other name (for example a CDN's client-address header) is read
// as a comma-separated address list like X-Forwarded-For.
//
// Only this header is read, never several: with several an attacker could
// pick the one a given proxy does not overwrite. The last WithHeader wins.
//
// A header is read only from trusted proxies, so WithHeader without
// WithTrustedProxies would do nothing; ClientIP and grpcmw.KeyByPeerIP refuse
// that combination with an error rather than let it pass for a working
// proxy setup.
//
// Forwarded elements are separated by commas and parameters by
// semicolons; parameter names are case-insensitive, values may be quoted,
// and spaces around elements and parameters are tolerated. An element
// without for= is treated like "unknown". Each header line that is walked
// must parse as a whole: a stray quote on the left would shift where every
// element to its right begins, so such a line is an error, not a guess.
// Unquoted values may contain ':', '[' and ']' (for=192.0.2.1:80), which
// RFC 7239 asks to quote but proxies often do not.
func WithHeader(name string) Option { return clientip.WithHeader(name) }

// WithPrefixes sets how many leading bits of a client address form its
// key: v4 for IPv4 (default 32, the whole address; below 32 the key is the
// masked network in CIDR form, "203.0.113.0/24"), v6 for IPv6 (default 64:
// one host usually controls a whole /64, so keying by the full address
// would let it rotate through 2^64 fresh keys). v4 must be in 1..32 and v6
// in 1..128; 0 keeps a default, so WithPrefixes(0, 48) sets IPv6 only.
func WithPrefixes(v4, v6 int) Option { return clientip.WithPrefixes(v4, v6) }
