package clientip

import (
	"fmt"
	"net/netip"
	"strings"
)

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
