package keyfunc

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unsafe"

	"github.com/floodgate/floodgate/core"
)

// testTrusted is the proxy set most tests run behind: a private range, an
// IPv6 range and one bare address.
var testTrusted = []string{"10.0.0.0/8", "2001:db8:ffff::/48", "192.0.2.1"}

func newReq(remote, header string, lines ...string) *http.Request {
	r := &http.Request{Method: http.MethodGet, RemoteAddr: remote, Header: http.Header{}}
	if header != "" {
		r.Header[http.CanonicalHeaderKey(header)] = lines
	}
	return r
}

type ipCase struct {
	name    string
	remote  string
	header  string   // request header carrying lines; "" for none
	lines   []string // header lines in order
	want    string   // key, when wantErr is nil
	wantErr error
}

func runIPCases(t *testing.T, fn Func, cases []ipCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fn(newReq(tc.remote, tc.header, tc.lines...))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("key = %q, err = %v; want error matching %v", got, err, tc.wantErr)
				}
				if got != "" {
					t.Errorf("key = %q alongside error; want empty", got)
				}
				if !strings.HasPrefix(err.Error(), "keyfunc: ") {
					t.Errorf("error %q does not start with \"keyfunc: \"", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Errorf("key = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClientIPDefaultIgnoresHeaders(t *testing.T) {
	t.Parallel()
	fn := MustClientIP()
	runIPCases(t, fn, []ipCase{
		{name: "ipv4 peer", remote: "192.0.2.1:1234", want: "192.0.2.1"},
		{name: "xff spoof ignored", remote: "192.0.2.1:1234", header: "X-Forwarded-For", lines: []string{"1.2.3.4"}, want: "192.0.2.1"},
		{name: "forwarded spoof ignored", remote: "192.0.2.1:1234", header: "Forwarded", lines: []string{"for=1.2.3.4"}, want: "192.0.2.1"},
		{name: "x-real-ip spoof ignored", remote: "192.0.2.1:1234", header: "X-Real-IP", lines: []string{"1.2.3.4"}, want: "192.0.2.1"},
		{name: "bare ipv4", remote: "198.51.100.9", want: "198.51.100.9"},
		{name: "ipv6 peer grouped by /64", remote: "[2001:db8:1:2:3:4:5:6]:443", want: "2001:db8:1:2::/64"},
		{name: "bare ipv6", remote: "2001:db8:1:2::9", want: "2001:db8:1:2::/64"},
		{name: "v4-mapped peer", remote: "[::ffff:198.51.100.9]:80", want: "198.51.100.9"},
		{name: "zone stripped", remote: "[fe80::1%eth0]:80", want: "fe80::/64"},
		{name: "empty", remote: "", wantErr: ErrInvalidRemoteAddr},
		{name: "unix socket", remote: "@", wantErr: ErrInvalidRemoteAddr},
		{name: "hostname", remote: "localhost:80", wantErr: ErrInvalidRemoteAddr},
		{name: "bad port", remote: "192.0.2.1:http", wantErr: ErrInvalidRemoteAddr},
		{name: "ipv4 in brackets", remote: "[192.0.2.1]:80", wantErr: ErrInvalidRemoteAddr},
		{name: "leading zero", remote: "192.0.2.01:80", wantErr: ErrInvalidRemoteAddr},
		{name: "empty zone", remote: "[fe80::1%]:80", wantErr: ErrInvalidRemoteAddr},
	})
}

func TestClientIPForwardedFor(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...))
	const xff = "X-Forwarded-For"
	runIPCases(t, fn, []ipCase{
		{name: "untrusted peer spoofing", remote: "198.51.100.7:5000", header: xff, lines: []string{"1.2.3.4"}, want: "198.51.100.7"},
		{name: "untrusted peer, trusted-looking header", remote: "198.51.100.7:5000", header: xff, lines: []string{"10.0.0.9"}, want: "198.51.100.7"},
		{name: "one hop", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "client spoof on the left ignored", remote: "10.0.0.1:5000", header: xff, lines: []string{"6.6.6.6, 203.0.113.7, 10.0.0.2"}, want: "203.0.113.7"},
		{name: "bare trusted address", remote: "192.0.2.1:1234", header: xff, lines: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "neighbour of bare trusted address is not trusted", remote: "192.0.2.2:1234", header: xff, lines: []string{"203.0.113.7"}, want: "192.0.2.2"},
		{name: "multi-line, client in first line", remote: "10.0.0.1:5000", header: xff, lines: []string{"6.6.6.6, 203.0.113.7", "10.0.0.3, 10.0.0.2"}, want: "203.0.113.7"},
		{name: "multi-line, last line wins", remote: "10.0.0.1:5000", header: xff, lines: []string{"6.6.6.6", "203.0.113.7"}, want: "203.0.113.7"},
		{name: "multi-line, trusted lines skipped", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7", "10.0.0.3", "10.0.0.2"}, want: "203.0.113.7"},
		{name: "all trusted: leftmost", remote: "10.0.0.1:5000", header: xff, lines: []string{"10.0.0.5, 10.0.0.3", "10.0.0.2"}, want: "10.0.0.5"},
		{name: "no header: peer", remote: "10.0.0.1:5000", want: "10.0.0.1"},
		{name: "empty header: peer", remote: "10.0.0.1:5000", header: xff, lines: []string{""}, want: "10.0.0.1"},
		{name: "only empty items: peer", remote: "10.0.0.1:5000", header: xff, lines: []string{" , ,\t", ""}, want: "10.0.0.1"},
		{name: "empty items skipped", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7,, ,10.0.0.2,"}, want: "203.0.113.7"},
		{name: "whitespace tolerated", remote: "10.0.0.1:5000", header: xff, lines: []string{"  203.0.113.7  ,\t10.0.0.2 "}, want: "203.0.113.7"},
		{name: "malformed before client", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7, garbage, 10.0.0.2"}, wantErr: ErrInvalidHeader},
		{name: "malformed rightmost", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7, 10.0.0.2:x"}, wantErr: ErrInvalidHeader},
		{name: "malformed in a later line", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7", "nope"}, wantErr: ErrInvalidHeader},
		{name: "malformed left of client ignored", remote: "10.0.0.1:5000", header: xff, lines: []string{"garbage, \"x\", 203.0.113.7"}, want: "203.0.113.7"},
		{name: "unknown", remote: "10.0.0.1:5000", header: xff, lines: []string{"unknown"}, wantErr: ErrInvalidHeader},
		{name: "unknown before client", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7, UNKNOWN"}, wantErr: ErrInvalidHeader},
		{name: "unknown after trusted hop", remote: "10.0.0.1:5000", header: xff, lines: []string{"unknown, 10.0.0.2"}, wantErr: ErrInvalidHeader},
		{name: "unknown left of client ignored", remote: "10.0.0.1:5000", header: xff, lines: []string{"unknown, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "obfuscated", remote: "10.0.0.1:5000", header: xff, lines: []string{"_hidden"}, wantErr: ErrInvalidHeader},
		{name: "quoted item is malformed", remote: "10.0.0.1:5000", header: xff, lines: []string{`"203.0.113.7"`}, wantErr: ErrInvalidHeader},
		{name: "port stripped", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7:4711"}, want: "203.0.113.7"},
		{name: "port out of range", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7:65536"}, wantErr: ErrInvalidHeader},
		{name: "empty port", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7:"}, wantErr: ErrInvalidHeader},
		{name: "bracketed ipv6 with port", remote: "10.0.0.1:5000", header: xff, lines: []string{"[2001:db8:1:2::5]:443"}, want: "2001:db8:1:2::/64"},
		{name: "bracketed ipv6", remote: "10.0.0.1:5000", header: xff, lines: []string{"[2001:db8:1:2::5]"}, want: "2001:db8:1:2::/64"},
		{name: "bare ipv6", remote: "10.0.0.1:5000", header: xff, lines: []string{"2001:db8:1:2:aaaa:bbbb:cccc:dddd"}, want: "2001:db8:1:2::/64"},
		{name: "unclosed bracket", remote: "10.0.0.1:5000", header: xff, lines: []string{"[2001:db8::5"}, wantErr: ErrInvalidHeader},
		{name: "v4-mapped", remote: "10.0.0.1:5000", header: xff, lines: []string{"::ffff:203.0.113.7"}, want: "203.0.113.7"},
		{name: "v4-mapped trusted hop skipped", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7, [::ffff:10.0.0.2]:80"}, want: "203.0.113.7"},
		{name: "v4-mapped trusted peer", remote: "[::ffff:10.0.0.1]:5000", header: xff, lines: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "zone stripped", remote: "10.0.0.1:5000", header: xff, lines: []string{"fe80::1%eth0"}, want: "fe80::/64"},
		{name: "empty zone", remote: "10.0.0.1:5000", header: xff, lines: []string{"fe80::1%"}, wantErr: ErrInvalidHeader},
		{name: "zone on ipv4", remote: "10.0.0.1:5000", header: xff, lines: []string{"203.0.113.7%eth0"}, wantErr: ErrInvalidHeader},
		{name: "trusted ipv6 hop skipped", remote: "[2001:db8:ffff::1]:443", header: xff, lines: []string{"203.0.113.7, 2001:db8:ffff:1::2"}, want: "203.0.113.7"},
		{name: "ipv6 client behind ipv6 proxy", remote: "[2001:db8:ffff::1]:443", header: xff, lines: []string{"2001:db8:5:6::7"}, want: "2001:db8:5:6::/64"},
		{name: "other headers not read", remote: "10.0.0.1:5000", header: "X-Real-IP", lines: []string{"203.0.113.7"}, want: "10.0.0.1"},
	})
}

func TestClientIPForwarded(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...), WithHeader("forwarded"))
	const fw = "Forwarded"
	const peer = "10.0.0.1:5000"
	runIPCases(t, fn, []ipCase{
		{name: "plain", remote: peer, header: fw, lines: []string{"for=203.0.113.7"}, want: "203.0.113.7"},
		{name: "untrusted peer", remote: "198.51.100.7:1", header: fw, lines: []string{"for=203.0.113.7"}, want: "198.51.100.7"},
		{name: "quoted ipv4", remote: peer, header: fw, lines: []string{`for="203.0.113.7"`}, want: "203.0.113.7"},
		{name: "quoted ipv6 with port", remote: peer, header: fw, lines: []string{`for="[2001:db8:1:2::1]:4711"`}, want: "2001:db8:1:2::/64"},
		{name: "obfuscated port", remote: peer, header: fw, lines: []string{`for="[2001:db8:1:2::1]:_p0rt"`}, want: "2001:db8:1:2::/64"},
		{name: "param name case", remote: peer, header: fw, lines: []string{"FOR=203.0.113.7"}, want: "203.0.113.7"},
		{name: "several params", remote: peer, header: fw, lines: []string{"proto=https;For=203.0.113.7;by=10.0.0.1"}, want: "203.0.113.7"},
		{name: "several elements", remote: peer, header: fw, lines: []string{"for=198.51.100.1, for=203.0.113.7, for=10.0.0.2"}, want: "203.0.113.7"},
		{name: "multi-line", remote: peer, header: fw, lines: []string{"for=203.0.113.7", "for=10.0.0.2;proto=http"}, want: "203.0.113.7"},
		{name: "all trusted", remote: peer, header: fw, lines: []string{`for=10.0.0.7, for="[2001:db8:ffff::9]"`}, want: "10.0.0.7"},
		{name: "empty: peer", remote: peer, header: fw, lines: []string{""}, want: "10.0.0.1"},
		{name: "empty elements skipped", remote: peer, header: fw, lines: []string{", for=203.0.113.7,, ;"}, want: "203.0.113.7"},
		{name: "whitespace", remote: peer, header: fw, lines: []string{" for=203.0.113.7 ; proto=http\t,  for=10.0.0.2 "}, want: "203.0.113.7"},
		{name: "comma and semicolon in quoted value", remote: peer, header: fw, lines: []string{`for=203.0.113.7;host="a,b;c=d", for=10.0.0.2`}, want: "203.0.113.7"},
		{name: "escaped quote in quoted value", remote: peer, header: fw, lines: []string{`for=203.0.113.7;x="a\",for=6.6.6.6"`}, want: "203.0.113.7"},
		{name: "quoted-pair in address", remote: peer, header: fw, lines: []string{`for="\203.0.113.7"`}, want: "203.0.113.7"},
		{name: "lenient unquoted ipv6", remote: peer, header: fw, lines: []string{"for=2001:db8:1:2::1"}, want: "2001:db8:1:2::/64"},
		{name: "lenient unquoted port", remote: peer, header: fw, lines: []string{"for=203.0.113.7:80"}, want: "203.0.113.7"},
		{name: "v4-mapped", remote: peer, header: fw, lines: []string{`for="[::ffff:203.0.113.7]"`}, want: "203.0.113.7"},
		{name: "zone", remote: peer, header: fw, lines: []string{`for="[fe80::1%25eth0]"`}, want: "fe80::/64"},
		{name: "unknown", remote: peer, header: fw, lines: []string{"for=unknown"}, wantErr: ErrInvalidHeader},
		{name: "quoted unknown with port", remote: peer, header: fw, lines: []string{`for="unknown:80"`}, wantErr: ErrInvalidHeader},
		{name: "obfuscated", remote: peer, header: fw, lines: []string{"for=_hidden"}, wantErr: ErrInvalidHeader},
		{name: "obfuscated quoted", remote: peer, header: fw, lines: []string{`for="_hidden:_port"`}, wantErr: ErrInvalidHeader},
		{name: "obfuscated before client", remote: peer, header: fw, lines: []string{"for=203.0.113.7, for=_hidden"}, wantErr: ErrInvalidHeader},
		{name: "obfuscated left of client ignored", remote: peer, header: fw, lines: []string{"for=_hidden, for=203.0.113.7"}, want: "203.0.113.7"},
		{name: "element without for", remote: peer, header: fw, lines: []string{"for=203.0.113.7, proto=https"}, wantErr: ErrInvalidHeader},
		{name: "duplicate for", remote: peer, header: fw, lines: []string{"for=203.0.113.7;for=10.0.0.2"}, wantErr: ErrInvalidHeader},
		{name: "unterminated quote", remote: peer, header: fw, lines: []string{`for="203.0.113.7`}, wantErr: ErrInvalidHeader},
		{name: "stray quote on the left spoils the line", remote: peer, header: fw, lines: []string{`for="6.6.6.6, for=203.0.113.7`}, wantErr: ErrInvalidHeader},
		{name: "space around =", remote: peer, header: fw, lines: []string{"for = 203.0.113.7"}, wantErr: ErrInvalidHeader},
		{name: "junk after value", remote: peer, header: fw, lines: []string{"for=203.0.113.7 x"}, wantErr: ErrInvalidHeader},
		{name: "empty value", remote: peer, header: fw, lines: []string{"for="}, wantErr: ErrInvalidHeader},
		{name: "bracketed ipv4", remote: peer, header: fw, lines: []string{`for="[203.0.113.7]"`}, wantErr: ErrInvalidHeader},
		{name: "x-forwarded-for not read", remote: peer, header: "X-Forwarded-For", lines: []string{"203.0.113.7"}, want: "10.0.0.1"},
	})
}

func TestClientIPRealIP(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...), WithHeader("X-Real-IP"))
	const h = "X-Real-Ip"
	const peer = "10.0.0.1:5000"
	runIPCases(t, fn, []ipCase{
		{name: "one address", remote: peer, header: h, lines: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "with port", remote: peer, header: h, lines: []string{"203.0.113.7:8080"}, want: "203.0.113.7"},
		{name: "appended line wins", remote: peer, header: h, lines: []string{"6.6.6.6", "203.0.113.7"}, want: "203.0.113.7"},
		{name: "trusted: leftmost", remote: peer, header: h, lines: []string{"10.0.0.9"}, want: "10.0.0.9"},
		{name: "list is malformed", remote: peer, header: h, lines: []string{"203.0.113.7, 10.0.0.2"}, wantErr: ErrInvalidHeader},
		{name: "ipv6", remote: peer, header: h, lines: []string{" 2001:db8:1:2::1 "}, want: "2001:db8:1:2::/64"},
		{name: "untrusted peer", remote: "198.51.100.7:1", header: h, lines: []string{"203.0.113.7"}, want: "198.51.100.7"},
	})
}

func TestClientIPPrefixes(t *testing.T) {
	t.Parallel()
	v4 := MustClientIP(WithTrustedProxies("10.0.0.0/8"), WithPrefixes(24, 0))
	v6 := MustClientIP(WithTrustedProxies("10.0.0.0/8"), WithPrefixes(0, 48))
	full := MustClientIP(WithPrefixes(0, 128))
	t.Run("v4/24", func(t *testing.T) {
		t.Parallel()
		runIPCases(t, v4, []ipCase{
			{name: "peer", remote: "198.51.100.77:1", want: "198.51.100.0/24"},
			{name: "header", remote: "10.0.0.1:1", header: "X-Forwarded-For", lines: []string{"203.0.113.7"}, want: "203.0.113.0/24"},
			{name: "v6 unaffected", remote: "[2001:db8:1:2::1]:1", want: "2001:db8:1:2::/64"},
		})
	})
	t.Run("v6/48", func(t *testing.T) {
		t.Parallel()
		runIPCases(t, v6, []ipCase{
			{name: "peer", remote: "[2001:db8:1:2::1]:1", want: "2001:db8:1::/48"},
			{name: "v4 unaffected", remote: "198.51.100.77:1", want: "198.51.100.77"},
		})
	})
	t.Run("v6/128", func(t *testing.T) {
		t.Parallel()
		runIPCases(t, full, []ipCase{
			{name: "peer", remote: "[2001:db8:1:2::1]:1", want: "2001:db8:1:2::1/128"},
		})
	})
}

// TestClientIPv6Grouping checks that one /64 is one client however its
// addresses are written, and that neighbouring /64s stay apart.
func TestClientIPv6Grouping(t *testing.T) {
	t.Parallel()
	fn := MustClientIP()
	same := []string{
		"[2001:db8:1:2::1]:1",
		"[2001:DB8:1:2:ffff:ffff:ffff:ffff]:2",
		"2001:0db8:0001:0002:0:0:0:9",
		"[2001:db8:1:2::1%eth0]:3",
	}
	var first string
	for i, remote := range same {
		k, err := fn(newReq(remote, ""))
		if err != nil {
			t.Fatalf("%s: %v", remote, err)
		}
		if i == 0 {
			first = k
		} else if k != first {
			t.Errorf("%s keyed %q, want %q like %s", remote, k, first, same[0])
		}
	}
	other, err := fn(newReq("[2001:db8:1:3::1]:1", ""))
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Errorf("neighbouring /64 keyed the same as %s: %q", same[0], other)
	}
}

func TestClientIPBounds(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...))
	fw := MustClientIP(WithTrustedProxies(testTrusted...), WithHeader("Forwarded"))
	const peer = "10.0.0.1:5000"
	manyTrusted := strings.Repeat("10.0.0.2, ", 100) + "10.0.0.3"
	manyLines := make([]string, 200)
	for i := range manyLines {
		manyLines[i] = "10.0.0.2"
	}
	huge := strings.Repeat("1", 1<<20)
	runIPCases(t, fn, []ipCase{
		{name: "too many trusted hops", remote: peer, header: "X-Forwarded-For", lines: []string{manyTrusted}, wantErr: core.ErrKeyTooLarge},
		{name: "too many lines", remote: peer, header: "X-Forwarded-For", lines: manyLines, wantErr: core.ErrKeyTooLarge},
		{name: "too many empty items", remote: peer, header: "X-Forwarded-For", lines: []string{strings.Repeat(",", 1000)}, wantErr: core.ErrKeyTooLarge},
		{name: "huge item", remote: peer, header: "X-Forwarded-For", lines: []string{huge}, wantErr: core.ErrKeyTooLarge},
		{name: "huge junk left of client", remote: peer, header: "X-Forwarded-For", lines: []string{huge + ", 203.0.113.7"}, want: "203.0.113.7"},
		{name: "many items left of client", remote: peer, header: "X-Forwarded-For", lines: []string{strings.Repeat("6.6.6.6,", 10000) + "203.0.113.7"}, want: "203.0.113.7"},
	})
	runIPCases(t, fw, []ipCase{
		{name: "forwarded too many elements", remote: peer, header: "Forwarded", lines: []string{strings.Repeat("for=10.0.0.2, ", 100)}, wantErr: core.ErrKeyTooLarge},
		{name: "forwarded huge line", remote: peer, header: "Forwarded", lines: []string{"for=203.0.113.7;x=" + huge}, wantErr: core.ErrKeyTooLarge},
		{name: "forwarded huge line left of client line", remote: peer, header: "Forwarded", lines: []string{huge, "for=203.0.113.7"}, want: "203.0.113.7"},
	})
}

// TestClientIPErrorTextBounded checks that errors, which get logged, do not
// carry a client's header at length.
func TestClientIPErrorTextBounded(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...))
	fw := MustClientIP(WithTrustedProxies(testTrusted...), WithHeader("Forwarded"))
	junk := strings.Repeat("\xff<script>", 100)
	reqs := map[string]struct {
		fn Func
		r  *http.Request
	}{
		"xff":       {fn, newReq("10.0.0.1:1", "X-Forwarded-For", junk)},
		"forwarded": {fw, newReq("10.0.0.1:1", "Forwarded", `for="`+junk+`"`)},
		"peer":      {fn, newReq(junk, "")},
	}
	for name, tc := range reqs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.fn(tc.r)
			if err == nil {
				t.Fatal("no error")
			}
			if n := len(err.Error()); n > 300 {
				t.Errorf("error is %d bytes: %q", n, err)
			}
		})
	}
}

// TestClientIPKeyDoesNotAliasHeader checks that a key taken from a header
// is a fresh string: a key that pointed into the header would keep the
// whole header alive for as long as the store keeps the key.
func TestClientIPKeyDoesNotAliasHeader(t *testing.T) {
	t.Parallel()
	fn := MustClientIP(WithTrustedProxies(testTrusted...))
	line := strings.Repeat("x", 1000) + ", 203.0.113.7"
	k, err := fn(newReq("10.0.0.1:1", "X-Forwarded-For", line))
	if err != nil {
		t.Fatal(err)
	}
	if k != "203.0.113.7" {
		t.Fatalf("key = %q", k)
	}
	kp := uintptr(unsafe.Pointer(unsafe.StringData(k)))
	lp := uintptr(unsafe.Pointer(unsafe.StringData(line)))
	if kp >= lp && kp < lp+uintptr(len(line)) {
		t.Fatal("key points into the header")
	}
}

func TestClientIPOptions(t *testing.T) {
	t.Parallel()
	bad := []struct {
		name string
		opts []Option
		want string // substring of the error
	}{
		{"cidr bits", []Option{WithTrustedProxies("10.0.0.0/33")}, `"10.0.0.0/33"`},
		{"not an address", []Option{WithTrustedProxies("proxy.internal")}, `"proxy.internal"`},
		{"empty entry", []Option{WithTrustedProxies("10.0.0.0/8", "")}, "empty entry"},
		{"v4 everything", []Option{WithTrustedProxies("0.0.0.0/0")}, "every address"},
		{"v6 everything", []Option{WithTrustedProxies("::/0")}, "every address"},
		{"mapped everything", []Option{WithTrustedProxies("::ffff:0.0.0.0/96")}, "every address"},
		{"mapped mixed", []Option{WithTrustedProxies("::ffff:0:0/80")}, "at least 96"},
		{"zone", []Option{WithTrustedProxies("fe80::1%eth0")}, "zone"},
		{"empty header", []Option{WithHeader("")}, "WithHeader"},
		{"header with space", []Option{WithHeader("X Forwarded For")}, "not a valid header name"},
		{"v6 prefix -1", []Option{WithPrefixes(0, -1)}, "1..128"},
		{"v6 prefix 129", []Option{WithPrefixes(0, 129)}, "1..128"},
		{"v4 prefix 33", []Option{WithPrefixes(33, 0)}, "1..32"},
		{"v4 prefix -1", []Option{WithPrefixes(-1, 0)}, "1..32"},
		{"first error reported", []Option{WithPrefixes(33, 0), WithPrefixes(0, 129)}, "IPv4 prefix 33"},
		{"header without trusted proxies", []Option{WithHeader("X-Forwarded-For")}, `WithHeader("X-Forwarded-For") has no effect without WithTrustedProxies`},
		{"header named as given", []Option{WithHeader("forwarded")}, `WithHeader("forwarded") has no effect`},
		{"last header named", []Option{WithHeader("Forwarded"), WithHeader("X-Real-IP")}, `WithHeader("X-Real-IP")`},
		{"header says what to do", []Option{WithHeader("X-Real-IP")}, "add WithTrustedProxies with your proxies' ranges, or drop WithHeader"},
		{"header with empty trusted list", []Option{WithTrustedProxies(), WithHeader("X-Real-IP")}, "without WithTrustedProxies"},
		{"header after prefix", []Option{WithPrefixes(0, 48), WithHeader("Forwarded")}, "without WithTrustedProxies"},
		{"invalid option reported before header", []Option{WithHeader("Forwarded"), WithPrefixes(33, 0)}, "WithPrefixes"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fn, err := ClientIP(tc.opts...)
			if err == nil {
				t.Fatal("no error")
			}
			if fn != nil {
				t.Error("non-nil Func alongside error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "keyfunc: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want prefix \"keyfunc: \" and %q", msg, tc.want)
			}
		})
	}

	good := []struct {
		name   string
		opts   []Option
		remote string
		want   string
	}{
		{"bare v4 is /32", []Option{WithTrustedProxies("192.0.2.1")}, "192.0.2.1:1", "203.0.113.7"},
		{"bare v6 is /128", []Option{WithTrustedProxies("2001:db8::1")}, "[2001:db8::1]:1", "203.0.113.7"},
		{"bare v6 neighbour untrusted", []Option{WithTrustedProxies("2001:db8::1")}, "[2001:db8::2]:1", "2001:db8::/64"},
		{"host bits ignored", []Option{WithTrustedProxies("10.1.2.3/8")}, "10.200.0.1:1", "203.0.113.7"},
		{"mapped range", []Option{WithTrustedProxies("::ffff:10.0.0.0/104")}, "10.9.9.9:1", "203.0.113.7"},
		{"spaces trimmed", []Option{WithTrustedProxies(" 10.0.0.0/8 ")}, "10.9.9.9:1", "203.0.113.7"},
		{"calls accumulate", []Option{WithTrustedProxies("192.0.2.1"), WithTrustedProxies("10.0.0.0/8")}, "10.9.9.9:1", "203.0.113.7"},
		{"nil option ignored", []Option{nil, WithTrustedProxies("10.0.0.0/8")}, "10.9.9.9:1", "203.0.113.7"},
		{"last header wins", []Option{WithTrustedProxies("10.0.0.0/8"), WithHeader("Forwarded"), WithHeader("x-forwarded-for")}, "10.9.9.9:1", "203.0.113.7"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fn, err := ClientIP(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fn(newReq(tc.remote, "X-Forwarded-For", "203.0.113.7"))
			if err != nil || got != tc.want {
				t.Errorf("key = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestMustClientIPPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("no panic for an invalid option")
		}
	}()
	MustClientIP(WithTrustedProxies("nonsense"))
}

func TestClientIPAllocs(t *testing.T) {
	def := MustClientIP()
	prox := MustClientIP(WithTrustedProxies("10.0.0.0/8"))
	cases := []struct {
		name string
		fn   Func
		r    *http.Request
		max  float64
	}{
		{"default ipv4 peer", def, newReq("192.0.2.1:1234", ""), 0},
		{"default ipv6 peer", def, newReq("[2001:db8:1:2::1]:1234", ""), 1},
		{"proxied", prox, newReq("10.0.0.1:1", "X-Forwarded-For", "203.0.113.7, 10.0.0.3, 10.0.0.2"), 1},
	}
	for _, tc := range cases {
		got := testing.AllocsPerRun(200, func() { _, _ = tc.fn(tc.r) })
		if got > tc.max {
			t.Errorf("%s: %v allocs per call, want <= %v", tc.name, got, tc.max)
		}
	}
}
