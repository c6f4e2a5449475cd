package keyfunc

import (
	"net/http"
	"testing"
)

var sinkKey string

func benchKey(b *testing.B, fn Func, r *http.Request, want string) {
	b.Helper()
	if k, err := fn(r); err != nil || k != want {
		b.Fatalf("key = %q, %v; want %q", k, err, want)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sinkKey, _ = fn(r)
	}
}

func BenchmarkClientIPDefault(b *testing.B) {
	benchKey(b, MustClientIP(), newReq("192.0.2.1:1234", ""), "192.0.2.1")
}

func BenchmarkClientIPDefaultIPv6(b *testing.B) {
	benchKey(b, MustClientIP(), newReq("[2001:db8:1:2::5]:1234", ""), "2001:db8:1:2::/64")
}

// BenchmarkClientIPProxiedXFF is the usual deployment: a client behind two
// trusted proxies, three hops in X-Forwarded-For.
func BenchmarkClientIPProxiedXFF(b *testing.B) {
	fn := MustClientIP(WithTrustedProxies("10.0.0.0/8", "172.16.0.0/12"))
	r := newReq("10.0.0.1:5555", "X-Forwarded-For", "203.0.113.7, 10.0.0.3, 172.16.0.2")
	benchKey(b, fn, r, "203.0.113.7")
}

func BenchmarkClientIPProxiedXFFIPv6(b *testing.B) {
	fn := MustClientIP(WithTrustedProxies("2001:db8:ffff::/48"))
	r := newReq("[2001:db8:ffff::1]:5555", "X-Forwarded-For", "2001:db8:1:2::7, 2001:db8:ffff::3, 2001:db8:ffff::2")
	benchKey(b, fn, r, "2001:db8:1:2::/64")
}

func BenchmarkClientIPProxiedForwarded(b *testing.B) {
	fn := MustClientIP(WithTrustedProxies("10.0.0.0/8"), WithHeader("Forwarded"))
	r := newReq("10.0.0.1:5555", "Forwarded", `for="[2001:db8:1:2::7]:4711";proto=https, for=10.0.0.3, for=10.0.0.2;by=10.0.0.1`)
	benchKey(b, fn, r, "2001:db8:1:2::/64")
}

// BenchmarkClientIPUntrustedPeerWithHeader is the spoofing case: the header
// is never looked at, so it costs no more than the default.
func BenchmarkClientIPUntrustedPeerWithHeader(b *testing.B) {
	fn := MustClientIP(WithTrustedProxies("10.0.0.0/8"))
	r := newReq("198.51.100.7:5555", "X-Forwarded-For", "1.2.3.4")
	benchKey(b, fn, r, "198.51.100.7")
}

func BenchmarkHeader(b *testing.B) {
	benchKey(b, Header("X-API-Key"), newReq("192.0.2.1:1", "X-Api-Key", "k-123"), "k-123")
}

func BenchmarkJoinIPRoute(b *testing.B) {
	r := newReq("192.0.2.1:1234", "")
	r.Pattern = "GET /items/{id}"
	benchKey(b, Join(MustClientIP(), Route()), r, "9:192.0.2.115:GET /items/{id}")
}
