package clientip

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"
)

// Option configures a Resolver; keyfunc.Option is this type, so that
// keyfunc's IP options serve grpcmw.KeyByPeerIP too.
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

// WithTrustedProxies is keyfunc.WithTrustedProxies.
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

// WithHeader is keyfunc.WithHeader.
func WithHeader(name string) Option {
	return func(o *options) {
		if name == "" {
			o.fail("WithHeader: empty header name; name the header your proxy sets, e.g. X-Forwarded-For")
			return
		}
		for i := 0; i < len(name); i++ {
			if !IsTchar(name[i]) {
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

// WithPrefixes is keyfunc.WithPrefixes.
func WithPrefixes(v4, v6 int) Option {
	return func(o *options) {
		switch {
		case v4 < 0 || v4 > 32:
			o.fail("WithPrefixes: IPv4 prefix %d is out of range; use 1..32 (32 keys each address), or 0 for the default", v4)
		case v6 < 0 || v6 > 128:
			o.fail("WithPrefixes: IPv6 prefix %d is out of range; use 1..128 (64 is typical), or 0 for the default", v6)
		default:
			if v4 != 0 {
				o.v4Bits = v4
			}
			if v6 != 0 {
				o.v6Bits = v6
			}
		}
	}
}

// IsTchar reports whether c may appear in an RFC 9110 token, the grammar of
// header names and of unquoted Forwarded parameters.
func IsTchar(c byte) bool {
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
