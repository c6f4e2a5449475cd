package clientip

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// testTrusted is the proxy set the fuzz targets run behind: a private
// range, an IPv6 range and one address.
var testTrusted = []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1"}

// fuzzKinds are the header configurations FuzzClientIP cycles through.
var fuzzKinds = []string{"X-Forwarded-For", "Forwarded", "X-Real-IP"}

func FuzzClientIP(f *testing.F) {
	seeds := []struct {
		remote, l1, l2 string
		mode           uint8
	}{
		{"10.0.0.1:80", "203.0.113.7, 10.0.0.2", "", 1 << 2},
		{"10.0.0.1:80", "6.6.6.6", "203.0.113.7", 2 << 2},
		{"[2001:db8:ffff::1]:443", "2001:db8:1:2::1, 2001:db8:ffff::2", "", 1 << 2},
		{"192.0.2.1:1", "unknown, 10.0.0.9", "", 1 << 2},
		{"10.0.0.1:80", "10.0.0.3, 10.0.0.4", "10.0.0.5", 2 << 2},
		{"198.51.100.7:1", "203.0.113.7", "", 1 << 2},
		{"10.0.0.1:80", `for="[2001:db8::1]:4711";proto=https, for=10.0.0.2`, "", 1<<2 | 1},
		{"10.0.0.1:80", `for=_hidden, for=203.0.113.7`, `for="\1.2.3.4"`, 2<<2 | 1},
		{"10.0.0.1:80", "203.0.113.7", "6.6.6.6, 7.7.7.7", 2<<2 | 2},
		{"[::ffff:10.0.0.1]:80", "fe80::1%eth0", "", 1 << 2},
		{"@", "1.2.3.4", "", 1 << 2},
		{"10.0.0.1", ",,,", " ", 2 << 2},
	}
	for _, s := range seeds {
		f.Add(s.remote, s.l1, s.l2, s.mode)
	}
	cfgs := make([]*clientIP, len(fuzzKinds))
	for i, h := range fuzzKinds {
		c, err := newClientIP([]Option{WithTrustedProxies(testTrusted...), WithHeader(h)})
		if err != nil {
			f.Fatal(err)
		}
		cfgs[i] = c
	}
	f.Fuzz(func(t *testing.T, remote, l1, l2 string, mode uint8) {
		c := cfgs[int(mode&3)%len(cfgs)]
		var lines []string
		switch (mode >> 2) % 3 {
		case 1:
			lines = []string{l1}
		case 2:
			lines = []string{l1, l2}
		}
		key, err := c.key(remote, lines)

		if err != nil {
			checkErr(t, err)
			if key != "" {
				t.Fatalf("key %q alongside error %v", key, err)
			}
		} else {
			checkCanonicalKey(t, c, key)
		}

		peer, perr := refPeer(remote)
		if (perr != nil) != errors.Is(err, ErrInvalidRemoteAddr) {
			t.Fatalf("peer %q: reference error %v, got %v", remote, perr, err)
		}
		if perr != nil {
			return
		}
		if !c.isTrusted(peer) {
			if err != nil || key != c.format(peer) {
				t.Fatalf("untrusted peer %q: key %q, %v; want the peer's own key", remote, key, err)
			}
			return
		}

		// A trusted address may be the key only when nothing untrusted and
		// valid stood between it and the peer.
		if err == nil && keyIsTrusted(c, key) {
			if addrs, ok := refHops(c, lines); ok {
				for _, a := range addrs {
					if !c.isTrusted(a) {
						t.Fatalf("key %q is a trusted proxy's, but hop %v is untrusted (lines %q)", key, a, lines)
					}
				}
			}
		}

		if c.kind == kindForwarded {
			return
		}
		want, wantErr := refWalkList(c, peer, lines)
		if errors.Is(err, ErrTooLarge) {
			n, size := 0, 0
			for _, l := range lines {
				n += strings.Count(l, ",") + 1
				size += len(l)
			}
			if n <= maxItems && size <= maxHeaderBytes {
				t.Fatalf("ErrTooLarge for %d items, %d bytes: %q", n, size, lines)
			}
			return
		}
		if (err != nil) != wantErr || key != want {
			t.Fatalf("lines %q: got %q, %v; reference says %q, error=%v", lines, key, err, want, wantErr)
		}
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "keyfunc: ") {
		t.Fatalf("error %q lacks the package prefix", msg)
	}
	if len(msg) > 300 {
		t.Fatalf("error is %d bytes long: %q", len(msg), msg)
	}
	for _, s := range []error{ErrInvalidRemoteAddr, ErrInvalidHeader, ErrTooLarge} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %v matches no sentinel", err)
}

// checkCanonicalKey checks that a key is an IPv4 dotted quad or a masked
// IPv6 prefix of the configured length, written canonically.
func checkCanonicalKey(t *testing.T, c *clientIP, key string) {
	t.Helper()
	if key == "" {
		t.Fatal("empty key without error")
	}
	if a, err := netip.ParseAddr(key); err == nil {
		if !a.Is4() || a.String() != key || c.v4Bits != 32 {
			t.Fatalf("key %q is an address but not a canonical IPv4 one", key)
		}
		return
	}
	p, err := netip.ParsePrefix(key)
	if err != nil {
		t.Fatalf("key %q is neither an address nor a prefix", key)
	}
	want := c.v6Bits
	if p.Addr().Is4() {
		want = c.v4Bits
	}
	if p.Addr().Is4In6() || p.Bits() != want || p.Masked() != p || p.String() != key {
		t.Fatalf("key %q is not a canonical masked /%d", key, want)
	}
}

func keyIsTrusted(c *clientIP, key string) bool {
	if a, err := netip.ParseAddr(key); err == nil {
		return c.isTrusted(a)
	}
	p, err := netip.ParsePrefix(key)
	if err != nil {
		return false
	}
	for _, t := range c.trusted {
		if t.Overlaps(p) {
			return true
		}
	}
	return false
}

// refPeer parses RemoteAddr the slow, obvious way.
func refPeer(remote string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		if port := remote[strings.LastIndexByte(remote, ':')+1:]; len(port) > 5 {
			return netip.Addr{}, errors.New("port longer than 5 digits")
		}
		a := ap.Addr()
		if a.Is4() && strings.HasPrefix(remote, "[") {
			return netip.Addr{}, errors.New("bracketed IPv4")
		}
		if a.Zone() == "" && strings.Contains(remote, "%") {
			return netip.Addr{}, errors.New("empty zone")
		}
		return a.WithZone("").Unmap(), nil
	}
	if len(remote) > 2 && remote[0] == '[' && remote[len(remote)-1] == ']' {
		remote = remote[1 : len(remote)-1] // a bracketed IPv6 address without port
		if !strings.Contains(remote, ":") || strings.ContainsAny(remote, "[]") {
			return netip.Addr{}, errors.New("brackets around a non-IPv6 address")
		}
	}
	if strings.Contains(remote, "%") && !strings.Contains(remote, ":") {
		return netip.Addr{}, errors.New("zone on IPv4")
	}
	if i := strings.IndexByte(remote, '%'); i >= 0 && i == len(remote)-1 {
		return netip.Addr{}, errors.New("empty zone")
	}
	a, err := netip.ParseAddr(remote)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.WithZone("").Unmap(), nil
}

// refItems splits header lines into items, rightmost last, the obvious way.
func refItems(c *clientIP, lines []string) []string {
	var items []string
	for _, l := range lines {
		if c.kind == kindSingle {
			items = append(items, strings.Trim(l, " \t"))
			continue
		}
		for _, it := range strings.Split(l, ",") {
			items = append(items, strings.Trim(it, " \t"))
		}
	}
	return items
}

// refWalkList is the documented walk, written for clarity, without limits.
func refWalkList(c *clientIP, peer netip.Addr, lines []string) (string, bool) {
	items := refItems(c, lines)
	var leftmost netip.Addr
	for i := len(items) - 1; i >= 0; i-- {
		if items[i] == "" {
			continue
		}
		a, st := parseNode(items[i], false)
		if st != nodeOK {
			return "", true
		}
		if !c.isTrusted(a) {
			return c.format(a), false
		}
		leftmost = a
	}
	if leftmost.IsValid() {
		return c.format(leftmost), false
	}
	return c.format(peer), false
}

// refHops lists every hop address in the header, or ok=false when some
// hop is not an address (then the trusted-key property is not checkable).
func refHops(c *clientIP, lines []string) (addrs []netip.Addr, ok bool) {
	if c.kind != kindForwarded {
		for _, it := range refItems(c, lines) {
			if it == "" {
				continue
			}
			a, st := parseNode(it, false)
			if st != nodeOK {
				return nil, false
			}
			addrs = append(addrs, a)
		}
		return addrs, true
	}
	var elems [maxItems]fwdElem
	for _, l := range lines {
		n, errAt, overflow := parseForwarded(l, elems[:])
		if errAt >= 0 || overflow {
			return nil, false
		}
		for _, e := range elems[:n] {
			if e.flags&fwdEmpty != 0 {
				continue
			}
			if e.flags&fwdHasFor == 0 || e.flags&fwdDupFor != 0 {
				return nil, false
			}
			node := l[e.start:e.end]
			if e.flags&fwdEscaped != 0 {
				node = unescapeQuoted(node)
			}
			a, st := parseNode(node, true)
			if st != nodeOK {
				return nil, false
			}
			addrs = append(addrs, a)
		}
	}
	return addrs, true
}

func FuzzForwarded(f *testing.F) {
	for _, s := range []string{
		"for=192.0.2.43",
		`for="[2001:db8:cafe::17]:4711"`,
		`for=192.0.2.60;proto=http;by=203.0.113.43`,
		`for=192.0.2.43, for=198.51.100.17`,
		`For="_gazonk"`,
		`for=unknown, for="\"quoted\\"`,
		` , ; for=1.2.3.4 ;; ,`,
		`for="unterminated`,
		`host="a,b;c";for=1.2.3.4`,
		"for=\"\xff\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var elems [maxItems]fwdElem
		n, errAt, overflow := parseForwarded(line, elems[:])
		if n < 0 || n > len(elems) {
			t.Fatalf("n = %d", n)
		}
		if overflow {
			return
		}
		if errAt >= 0 {
			if errAt > len(line) {
				t.Fatalf("error offset %d beyond line of %d bytes", errAt, len(line))
			}
			if n2, _, _ := parseForwarded(line[:errAt], elems[:]); n2 < n {
				t.Fatalf("prefix before the error has fewer elements")
			}
			return
		}
		if want := refElementCount(line); n != want {
			t.Fatalf("%d elements, reference counts %d in %q", n, want, line)
		}

		// Write the elements back out, quoting every for= value, and parse
		// again: the same elements must come back.
		var b strings.Builder
		type got struct {
			flags uint8
			node  string
		}
		var first []got
		for i, e := range elems[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			node := ""
			if e.flags&fwdHasFor != 0 {
				if e.start < 0 || e.end < e.start || int(e.end) > len(line) {
					t.Fatalf("element %d spans [%d,%d) of %d bytes", i, e.start, e.end, len(line))
				}
				node = line[e.start:e.end]
				if e.flags&fwdEscaped != 0 {
					node = unescapeQuoted(node)
				}
			}
			first = append(first, got{e.flags &^ fwdEscaped, node})
			switch {
			case e.flags&fwdEmpty != 0:
			case e.flags&fwdHasFor == 0:
				b.WriteString("proto=x")
			default:
				b.WriteString("FoR=")
				b.WriteString(quoteFwd(node))
				if e.flags&fwdDupFor != 0 {
					b.WriteString(";for=x")
				}
			}
		}
		line2 := b.String()
		n2, errAt2, _ := parseForwarded(line2, elems[:])
		if errAt2 >= 0 || n2 != n {
			t.Fatalf("re-encoded %q -> %q: n=%d err at %d, want n=%d", line, line2, n2, errAt2, n)
		}
		for i, e := range elems[:n2] {
			node := ""
			if e.flags&fwdHasFor != 0 {
				node = line2[e.start:e.end]
				if e.flags&fwdEscaped != 0 {
					node = unescapeQuoted(node)
				}
			}
			if g := (got{e.flags &^ fwdEscaped, node}); g != first[i] {
				t.Fatalf("element %d: %+v, then %+v after re-encoding as %q", i, first[i], g, line2)
			}
		}
	})
}

// quoteFwd writes s as an RFC 7239 quoted string.
func quoteFwd(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// refElementCount counts commas outside quoted strings, plus one.
func refElementCount(line string) int {
	n, inQuote := 1, false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == ',':
			n++
		}
	}
	return n
}

// FuzzAddr checks the hand-written address fast paths against net/netip.
func FuzzAddr(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "01.2.3.4", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "::ffff:1.2.3.4", "2001:db8::1", "0.0.0.0", "1.2.3.4:80"} {
		f.Add(s, []byte(s))
	}
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		ip, n, ok := parseIPv4Prefix(s)
		if ok {
			if n < 7 || n > 15 || n > len(s) {
				t.Fatalf("parseIPv4Prefix(%q) used %d bytes", s, n)
			}
			want, err := netip.ParseAddr(s[:n])
			if err != nil || want != netip.AddrFrom4(ip) {
				t.Fatalf("parseIPv4Prefix(%q) = %v, netip says %v, %v", s, ip, want, err)
			}
		}
		if want, err := netip.ParseAddr(s); err == nil && want.Is4() {
			if !ok || n != len(s) {
				t.Fatalf("parseIPv4Prefix(%q) rejected what netip accepts", s)
			}
		}

		if a, st := parseNode(s, false); st == nodeOK {
			if want, err := refPeer(s); err != nil || want != a {
				t.Fatalf("parseNode(%q) = %v, reference says %v, %v", s, a, want, err)
			}
		} else if want, err := refPeer(s); err == nil {
			t.Fatalf("parseNode(%q) failed, reference says %v", s, want)
		}

		var a16 [16]byte
		copy(a16[:], raw)
		bits := 1 + int(a16[15])%128
		p, _ := netip.AddrFrom16(a16).Prefix(bits)
		if p.Addr().Is4In6() {
			return
		}
		if got, want := string(appendKey6(nil, p)), p.String(); got != want {
			t.Fatalf("appendKey6 = %q, netip says %q", got, want)
		}
	})
}
