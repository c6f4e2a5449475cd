package keyfunc_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// Behind a load balancer in 10.0.0.0/8 the client is the rightmost address
// the balancer did not add; whatever the client wrote further left is
// ignored. A peer outside the trusted range is keyed by its own address.
func ExampleClientIP() {
	key := keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8"))

	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:34567"
	r.Header.Set("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.0.0.2")
	fmt.Println(key(r))

	r.RemoteAddr = "198.51.100.9:34567" // not a proxy: its header is not believed
	fmt.Println(key(r))

	r.RemoteAddr = "[2001:db8:1:2::99]:443"
	fmt.Println(key(r))
	// Output:
	// 203.0.113.7 <nil>
	// 198.51.100.9 <nil>
	// 2001:db8:1:2::/64 <nil>
}

func ExampleClientIP_forwarded() {
	key, err := keyfunc.ClientIP(
		keyfunc.WithTrustedProxies("10.0.0.0/8"),
		keyfunc.WithHeader("Forwarded"),
	)
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:34567"
	r.Header.Set("Forwarded", `for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.2`)
	fmt.Println(key(r))

	r.Header.Set("Forwarded", "for=unknown")
	_, err = key(r)
	fmt.Println(errors.Is(err, keyfunc.ErrInvalidHeader))
	// Output:
	// 2001:db8:cafe::/64 <nil>
	// true
}

func ExampleClientIP_badOption() {
	_, err := keyfunc.ClientIP(keyfunc.WithTrustedProxies("10.0.0.0/33"))
	fmt.Println(err)
	// Output: keyfunc: WithTrustedProxies: "10.0.0.0/33" is not a CIDR range (want e.g. 10.0.0.0/8 or 2001:db8::/32): netip.ParsePrefix("10.0.0.0/33"): prefix length out of range
}

// A proxy header is read only from trusted proxies, so naming one without
// saying which proxies to trust is refused rather than silently ignored.
func ExampleClientIP_headerWithoutProxies() {
	_, err := keyfunc.ClientIP(keyfunc.WithHeader("X-Forwarded-For"))
	fmt.Println(err)
	// Output: keyfunc: WithHeader("X-Forwarded-For") has no effect without WithTrustedProxies: add WithTrustedProxies with your proxies' ranges, or drop WithHeader to key by the socket peer
}

// Join keys by several things at once; each part is length-prefixed, so
// parts that contain the separator cannot collide.
func ExampleJoin() {
	key := keyfunc.Join(keyfunc.MustClientIP(), keyfunc.Route())

	r := httptest.NewRequest("GET", "/items/42", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	r.Pattern = "GET /items/{id}"
	k, err := key(r)
	if err != nil {
		panic(err)
	}
	fmt.Println(k)
	// Output: 9:192.0.2.115:GET /items/{id}
}

func ExampleHeader() {
	key := keyfunc.Header("X-API-Key")
	r := httptest.NewRequest("GET", "/", nil)
	_, err := key(r)
	fmt.Println(errors.Is(err, keyfunc.ErrNoKey))
	// Output: true
}

// Keyed by route, /users/1 and /users/2 share /users/{id}'s limit: the
// limiter sits on the route, where the ServeMux has recorded its pattern.
func ExampleRoute() {
	l := httpmw.MustNew(core.MustNew(core.PerMinute(2)), keyfunc.Route())
	mux := http.NewServeMux()
	mux.Handle("GET /users/{id}", l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	for _, path := range []string{"/users/1", "/users/2", "/users/3"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code)
	}
	// Output:
	// /users/1 200
	// /users/2 200
	// /users/3 429
}
