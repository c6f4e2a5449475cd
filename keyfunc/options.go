package keyfunc

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"
)

// Option configures ClientIP and NewIPResolver.
type Option func(*options)

// headerKind selects the grammar of the proxy header; it follows from the
// header's name so a user cannot pair a name with the wrong parser.
type headerKind uint8

const (
	// kindList is X-Forwarded-For and any other comma-separated address
	// list (a single-address header is a list of one).
	kindList headerKind = iota
	// kindForwarded is RFC 7239 Forwarded.
	kindForwarded
	// kindSingle is X-Real-IP: every header line holds exactly one address.
	kindSingle
)

type options struct {
	trusted []netip.Prefix
	header  string // canonical MIME form, the key of http.Header
	named   string // the name the last WithHeader was given, "" if none
	kind    headerKind
	v4Bits  int
	v6Bits  int
	err     error // first invalid option; reported by the constructor
}

func defaultOptions() options {
	return options{
		header: "X-Forwarded-For",
		kind:   kindList,
		v4Bits: 32,
		v6Bits: 64,
	}
}

// fail keeps the first error only: later options are often derived from
// the same bad input and would bury the cause.
func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("keyfunc: "+format, args...)
	}
}

// WithTrustedProxies lists the proxies whose forwarding header is believed.
// Each entry is a CIDR range ("10.0.0.0/8", "2001:db8::/32") or a bare
// address, which means that one address (/32 or /128). Host bits in a range
// are ignored. IPv4-mapped IPv6 entries ("::ffff:10.0.0.0/104") are treated
// as the IPv4 range they map. Calls accumulate.
//
// Without this option no proxy is trusted and the key is the socket peer,
// whatever headers the request carries. A range that covers every address
// (/0) is refused: it would let any client choose its own key.
func WithTrustedProxies(cidrs ...string) Option {
	return func(o *options) {
		for _, s := range cidrs {
			p, err := parseTrusted(s)
			if err != nil {
				o.fail("%v", err)
				return
			}
			o.trusted = append(o.trusted, p)
		}
	}
}

func parseTrusted(s string) (netip.Prefix, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: empty entry; give a CIDR range such as 10.0.0.0/8 or an address such as 192.0.2.1")
	}
	var p netip.Prefix
	if strings.IndexByte(t, '/') >= 0 {
		var err error
		p, err = netip.ParsePrefix(t)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: %q is not a CIDR range (want e.g. 10.0.0.0/8 or 2001:db8::/32): %v", t, err)
		}
	} else {
		if strings.IndexByte(t, '%') >= 0 {
			return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: %q has an IPv6 zone; zones are stripped from peers, so list the address without %%zone", t)
		}
		a, err := netip.ParseAddr(t)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: %q is not an IP address or CIDR range (want e.g. 192.0.2.1 or 10.0.0.0/8): %v", t, err)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	// Peers and header addresses are unmapped before matching, so a mapped
	// range must be unmapped too or it would never match anything.
	if a := p.Addr(); a.Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: %q mixes IPv4-mapped and native IPv6 space; use a prefix length of at least 96 or an IPv4 range", t)
		}
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, fmt.Errorf("WithTrustedProxies: %q trusts every address, which lets any client choose its own key; list only your proxies' ranges", t)
	}
	return p.Masked(), nil
}

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
// WithTrustedProxies would do nothing; ClientIP and NewIPResolver refuse
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
func WithHeader(name string) Option {
	return func(o *options) {
		if name == "" {
			o.fail("WithHeader: empty header name; name the header your proxy sets, e.g. X-Forwarded-For")
			return
		}
		for i := 0; i < len(name); i++ {
			if !isTchar(name[i]) {
				o.fail("WithHeader: %q is not a valid header name (byte %d is not allowed)", name, i)
				return
			}
		}
		o.header = textproto.CanonicalMIMEHeaderKey(name)
		o.named = name
		switch o.header {
		case "Forwarded":
			o.kind = kindForwarded
		case "X-Real-Ip":
			o.kind = kindSingle
		default:
			o.kind = kindList
		}
	}
}

// WithIPv6Prefix sets how many leading bits of an IPv6 client address form
// its key (default 64). One host usually controls a whole /64, so keying by
// the full address would let it rotate through 2^64 fresh keys. bits must be
// in 1..128.
func WithIPv6Prefix(bits int) Option {
	return func(o *options) {
		if bits < 1 || bits > 128 {
			o.fail("WithIPv6Prefix: %d is out of range; use 1..128 (64 is typical)", bits)
			return
		}
		o.v6Bits = bits
	}
}

// WithIPv4Prefix sets how many leading bits of an IPv4 client address form
// its key (default 32, the whole address). Below 32 the key is the masked
// network in CIDR form ("203.0.113.0/24"). bits must be in 1..32.
func WithIPv4Prefix(bits int) Option {
	return func(o *options) {
		if bits < 1 || bits > 32 {
			o.fail("WithIPv4Prefix: %d is out of range; use 1..32 (32 keys each address)", bits)
			return
		}
		o.v4Bits = bits
	}
}

// isTchar reports whether c may appear in an RFC 9110 token, the grammar of
// header names and of unquoted Forwarded parameters.
func isTchar(c byte) bool {
	return tcharTable[c]
}

var tcharTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
