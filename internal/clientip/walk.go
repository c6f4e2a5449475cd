package clientip

import (
	"fmt"
	"net/netip"
	"strings"
)

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
