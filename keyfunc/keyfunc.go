package keyfunc

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/floodgate/floodgate/internal/clientip"
)

// Func derives the rate-limit key of an HTTP request. It never returns an
// empty key with a nil error: a request that yields no key is an error
// for the caller's error handler, never "unlimited".
type Func func(*http.Request) (string, error)

// maxKeyLen bounds the keys Header, Route and Method take from a request
// (4096 bytes). Keys are kept in the limiter's store, which bounds the
// number of entries, not their size; without a cap a client could make
// each entry as large as its request headers.
const maxKeyLen = clientip.MaxKeyLen

var (
	// ErrNoKey is matched by the error of a request that carries nothing to
	// key on: a missing or empty header, an empty path. It is the client's
	// fault: it also matches core.ErrBadKey, which adapters answer 400
	// (gRPC InvalidArgument). grpcmw's key functions fail with it too.
	ErrNoKey = clientip.ErrNoKey

	// ErrInvalidRemoteAddr is matched when the socket peer (RemoteAddr) is
	// not an IP address, as on a Unix socket. It is the server's setup, not
	// the client's doing: adapters answer 500 (gRPC Internal).
	ErrInvalidRemoteAddr = clientip.ErrInvalidRemoteAddr

	// ErrInvalidHeader is matched when a trusted proxy's header does not
	// identify the client: a malformed item, "unknown", or an obfuscated
	// identifier reached before any untrusted address. Falling back to the
	// proxy's own address instead would put every client in one bucket.
	// Proxies pass on what clients send, so it matches core.ErrBadKey.
	ErrInvalidHeader = clientip.ErrInvalidHeader
)

// A request value longer than a key function is willing to examine or keep
// (4096 bytes for Header, Route and Method; see ClientIP for its bounds) is
// an error matching core.ErrKeyTooLarge, which HTTP adapters answer 431.

// Header keys by the value of the named request header, such as an API
// key. When the header appears more than once the first value is used,
// like http.Header.Get, so the key matches what the rest of the handler
// chain reads. A missing or empty header is an error matching ErrNoKey; a
// value longer than 4096 bytes is an error matching core.ErrKeyTooLarge.
//
// Header panics if name is not a valid header name, as that is a
// programming error best found at startup.
func Header(name string) Func {
	if name == "" {
		panic("keyfunc: Header needs a header name")
	}
	for i := 0; i < len(name); i++ {
		if !clientip.IsTchar(name[i]) {
			panic(fmt.Sprintf("keyfunc: Header: %q is not a valid header name", name))
		}
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) (string, error) {
		vs := r.Header[canon]
		if len(vs) == 0 || vs[0] == "" {
			return "", fmt.Errorf("%w: header %s is missing or empty", ErrNoKey, canon)
		}
		if len(vs[0]) > maxKeyLen {
			return "", fmt.Errorf("%w: header %s is %d bytes, more than %d", clientip.ErrTooLarge, canon, len(vs[0]), maxKeyLen)
		}
		return vs[0], nil
	}
}

// Route keys by the template of the route that matched the request, so
// every item shares its route's limit (go-chi/httprate's KeyByEndpoint):
// /users/1 and /users/2 both key as their route's template. The template
// is http.Request.Pattern, which net/http's ServeMux sets ("GET
// /users/{id}") and ginmw and echomw set to Gin's c.FullPath() and Echo's
// c.Path() ("/users/:id"); grpcmw.KeyByMethod is the same for gRPC. A
// request that matched no route (a 404, or a router that records no
// pattern) keys as its URL path, so it is still limited, per path. An
// empty path is an error matching ErrNoKey; a key longer than 4096 bytes
// an error matching core.ErrKeyTooLarge.
func Route() Func {
	return route
}

func route(r *http.Request) (string, error) {
	if r.Pattern != "" {
		return checkLen("route pattern", r.Pattern)
	}
	return path(r)
}

func path(r *http.Request) (string, error) {
	if r.URL == nil {
		return "", fmt.Errorf("%w: request has no URL", ErrNoKey)
	}
	return checkLen("URL path", r.URL.Path)
}

// Method keys by the request method. An empty method is GET, as net/http
// defines it; one longer than 4096 bytes is an error matching
// core.ErrKeyTooLarge.
func Method() Func {
	return method
}

func method(r *http.Request) (string, error) {
	if r.Method == "" {
		return http.MethodGet, nil
	}
	return checkLen("method", r.Method)
}

func checkLen(what, s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrNoKey, what)
	}
	if len(s) > maxKeyLen {
		return "", fmt.Errorf("%w: %s is %d bytes, more than %d", clientip.ErrTooLarge, what, len(s), maxKeyLen)
	}
	return s, nil
}

// Constant puts every request in one bucket named key: a global limit.
// Constant panics if key is empty, since an empty key is never valid.
func Constant(key string) Func {
	if key == "" {
		panic("keyfunc: Constant needs a non-empty key")
	}
	return func(*http.Request) (string, error) { return key, nil }
}

// Join keys by several key functions at once, such as client IP and route.
// Each part is written as its length, a colon, and the part itself
// ("3:a:b1:c"), so no choice of parts can forge another combination:
// ("a:b", "c") and ("a", "b:c") always give different keys. The first
// error from any part is returned, and an empty part is an error matching
// ErrNoKey.
//
// Join panics if given no functions or a nil one.
func Join(fns ...Func) Func {
	return clientip.JoinFuncs("keyfunc.Join", fns...)
}
