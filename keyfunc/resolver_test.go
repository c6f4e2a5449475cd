package keyfunc

import (
	"net/http"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/clientip"
)

// TestIPResolverMatchesClientIP runs requests through ClientIP and the same
// peer and header lines through clientip.Resolver.Resolve, under each
// configuration: keys and errors must be identical, since one is built on
// the other and the gRPC adapter relies on that.
func TestIPResolverMatchesClientIP(t *testing.T) {
	t.Parallel()
	configs := []struct {
		name   string
		header string // the request header the lines go in
		opts   []Option
	}{
		{"default", "X-Forwarded-For", nil},
		{"xff", "X-Forwarded-For", []Option{WithTrustedProxies(testTrusted...)}},
		{"forwarded", "Forwarded", []Option{WithTrustedProxies(testTrusted...), WithHeader("Forwarded")}},
		{"x-real-ip", "X-Real-Ip", []Option{WithTrustedProxies(testTrusted...), WithHeader("x-real-ip")}},
		{"prefixes", "X-Forwarded-For", []Option{WithTrustedProxies(testTrusted...), WithPrefixes(24, 48)}},
	}
	requests := []struct {
		remote string
		lines  []string
	}{
		{"192.0.2.9:1234", nil},
		{"198.51.100.7:5000", []string{"1.2.3.4"}},
		{"10.0.0.1:5000", nil},
		{"10.0.0.1:5000", []string{"6.6.6.6, 203.0.113.7, 10.0.0.2"}},
		{"10.0.0.1:5000", []string{"for=203.0.113.7", "for=10.0.0.2"}},
		{"10.0.0.1:5000", []string{"203.0.113.7"}},
		{"10.0.0.1:5000", []string{"10.0.0.5, 10.0.0.3", "10.0.0.2"}},
		{"10.0.0.1:5000", []string{"203.0.113.7, garbage"}},
		{"10.0.0.1:5000", []string{"unknown"}},
		{"10.0.0.1:5000", []string{"for=unknown"}},
		{"[2001:db8:ffff::1]:443", []string{"[2001:db8:1:2::5]:443"}},
		{"[2001:db8:1:2:3:4:5:6]:443", nil},
		{"[::ffff:10.0.0.1]:80", []string{"::ffff:203.0.113.7"}},
		{"", nil},
		{"localhost:80", []string{"203.0.113.7"}},
		{"10.0.0.1:5000", []string{strings.Repeat("10.0.0.9,", 70)}},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			t.Parallel()
			fn, err := ClientIP(cfg.opts...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := clientip.New(cfg.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, rq := range requests {
				r := &http.Request{RemoteAddr: rq.remote, Header: http.Header{}}
				if rq.lines != nil {
					r.Header[cfg.header] = rq.lines
				}
				wantKey, wantErr := fn(r)
				gotKey, gotErr := res.Resolve(rq.remote, rq.lines)
				if gotKey != wantKey || (gotErr == nil) != (wantErr == nil) ||
					gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Errorf("Resolve(%q, %q) = %q, %v; ClientIP gives %q, %v",
						rq.remote, rq.lines, gotKey, gotErr, wantKey, wantErr)
				}
			}
		})
	}
}

func TestIPResolverHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"no proxies: no header read", nil, ""},
		{"default header", []Option{WithTrustedProxies("10.0.0.0/8")}, "X-Forwarded-For"},
		{"canonical form", []Option{WithTrustedProxies("10.0.0.0/8"), WithHeader("x-real-ip")}, "X-Real-Ip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := clientip.New(tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Header(); got != tc.want {
				t.Errorf("Header() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIPResolverNoProxiesIgnoresValues(t *testing.T) {
	t.Parallel()
	res, err := clientip.New()
	if err != nil {
		t.Fatal(err)
	}
	got, err := res.Resolve("192.0.2.1:80", []string{"1.2.3.4"})
	if err != nil || got != "192.0.2.1" {
		t.Errorf("Resolve = %q, %v; want the peer 192.0.2.1", got, err)
	}
}

func TestNewIPResolverInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, opt := range []Option{WithTrustedProxies("0.0.0.0/0"), WithHeader(""), WithPrefixes(0, 129), WithHeader("Forwarded")} {
		res, err := clientip.New(opt)
		if err == nil || res != nil {
			t.Errorf("NewIPResolver = %v, %v; want an error", res, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "keyfunc: ") {
			t.Errorf("error %q does not start with \"keyfunc: \"", err)
		}
	}
}

func TestJoinParts(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "1:a"},
		{[]string{"a:b", "c"}, "3:a:b1:c"},
		{[]string{"a", "b:c"}, "1:a3:b:c"},
		{[]string{""}, "0:"},
		{[]string{strings.Repeat("x", 12)}, "12:" + strings.Repeat("x", 12)},
	}
	for _, tc := range tests {
		if got := clientip.JoinParts(tc.parts...); got != tc.want {
			t.Errorf("clientip.JoinParts(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
	// Join and JoinParts must agree: adapters rely on it.
	k, err := Join(Constant("a:b"), Constant("c"))(&http.Request{})
	if err != nil || k != clientip.JoinParts("a:b", "c") {
		t.Errorf("Join = %q, %v; JoinParts = %q", k, err, clientip.JoinParts("a:b", "c"))
	}
	if n := testing.AllocsPerRun(100, func() { _ = clientip.JoinParts("203.0.113.7", "/pkg.S/M") }); n > 1 {
		t.Errorf("JoinParts allocates %v times, want at most 1", n)
	}
}
