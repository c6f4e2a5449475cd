package keyfunc

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/floodgate/floodgate/core"
)

// Func derives the rate-limit key of an HTTP request. It never returns an
// empty key with a nil error: a request that yields no key is an error
// for the caller's error handler, never "unlimited".
type Func func(*http.Request) (string, error)

// MaxKeyLen bounds the keys Header, Path, Route and Method take from a
// request. Keys are kept in the limiter's store, which bounds the number
// of entries, not their size; without a cap a client could make each entry
// as large as its request headers.
const MaxKeyLen = 4096

var (
	// ErrNoKey is matched by the error of a request that carries nothing to
	// key on: a missing or empty header, an empty path. It is the client's
	// fault: it also matches core.ErrBadKey, which adapters answer 400
	// (gRPC InvalidArgument).
	ErrNoKey error = &keyError{"keyfunc: no key in request", core.ErrBadKey}

	// ErrInvalidRemoteAddr is matched when the socket peer (RemoteAddr) is
	// not an IP address, as on a Unix socket. It is the server's setup, not
	// the client's doing: adapters answer 500 (gRPC Internal).
	ErrInvalidRemoteAddr = errors.New("keyfunc: remote address is not an IP")

	// ErrInvalidHeader is matched when a trusted proxy's header does not
	// identify the client: a malformed item, "unknown", or an obfuscated
	// identifier reached before any untrusted address. Falling back to the
	// proxy's own address instead would put every client in one bucket.
	// Proxies pass on what clients send, so it matches core.ErrBadKey.
	ErrInvalidHeader error = &keyError{"keyfunc: proxy header does not identify the client", core.ErrBadKey}

	// ErrTooLarge is matched when a request value exceeds what a key
	// function is willing to examine or keep (see MaxKeyLen and ClientIP).
	// It matches core.ErrKeyTooLarge, which HTTP adapters answer 431.
	ErrTooLarge error = &keyError{"keyfunc: request value too large", core.ErrKeyTooLarge}
)

// keyError is a sentinel with its own text that also matches a core error
// class, so adapters classify it without knowing this package.
type keyError struct {
	msg   string
	class error
}

func (e *keyError) Error() string { return e.msg }
func (e *keyError) Unwrap() error { return e.class }

// quoteMax is how many runes of request data an error message quotes, so
// errors (which end up in logs) never carry unbounded attacker bytes.
const quoteMax = 32

// Header keys by the value of the named request header, such as an API
// key. When the header appears more than once the first value is used,
// like http.Header.Get, so the key matches what the rest of the handler
// chain reads. A missing or empty header is an error matching ErrNoKey; a
// value longer than MaxKeyLen is an error matching ErrTooLarge.
//
// Header panics if name is not a valid header name, as that is a
// programming error best found at startup.
func Header(name string) Func {
	if name == "" {
		panic("keyfunc: Header needs a header name")
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			panic(fmt.Sprintf("keyfunc: Header: %q is not a valid header name", name))
		}
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) (string, error) {
		vs := r.Header[canon]
		if len(vs) == 0 || vs[0] == "" {
			return "", fmt.Errorf("%w: header %s is missing or empty", ErrNoKey, canon)
		}
		if len(vs[0]) > MaxKeyLen {
			return "", fmt.Errorf("%w: header %s is %d bytes, more than %d", ErrTooLarge, canon, len(vs[0]), MaxKeyLen)
		}
		return vs[0], nil
	}
}

// Route keys by the ServeMux pattern that matched the request
// (http.Request.Pattern, such as "GET /items/{id}"), so every item shares
// its route's limit. Outside a ServeMux, or when nothing matched (a 404),
// it falls back to the URL path (see Path), so unmatched requests are
// still limited, per path. Errors are as for Path; a pattern is bounded
// by MaxKeyLen too.
func Route() Func {
	return route
}

func route(r *http.Request) (string, error) {
	if r.Pattern != "" {
		return checkLen("route pattern", r.Pattern)
	}
	return path(r)
}

// Path keys by the request's URL path (decoded, without the query). Every
// distinct path is its own bucket; prefer Route when paths carry IDs. An
// empty path is an error matching ErrNoKey, one longer than MaxKeyLen an
// error matching ErrTooLarge.
func Path() Func {
	return path
}

func path(r *http.Request) (string, error) {
	if r.URL == nil {
		return "", fmt.Errorf("%w: request has no URL", ErrNoKey)
	}
	return checkLen("URL path", r.URL.Path)
}

// Method keys by the request method. An empty method is GET, as net/http
// defines it; one longer than MaxKeyLen is an error matching ErrTooLarge.
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
	if len(s) > MaxKeyLen {
		return "", fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, what, len(s), MaxKeyLen)
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
	return JoinFuncs("keyfunc.Join", fns...)
}

// JoinFuncs is Join for key functions of any request type R, so that
// adapters for other transports join keys with the same code and encoding.
// It returns a key function that calls every fn in order on the request
// and joins their keys with JoinParts. The first error from any fn is
// returned as it is; an empty key from fn i is an error matching ErrNoKey
// that names caller and i. fns is copied, so the caller may reuse its
// slice.
//
// caller is the exported function that calls JoinFuncs, qualified by its
// package ("keyfunc.Join", "grpcmw.JoinKeys"), so that panics and errors
// name the function the user called; "" stands for "keyfunc.JoinFuncs".
//
// JoinFuncs panics, with a message starting "<package>: <function>", if
// given no functions or a nil one: a programming error best found at
// startup.
func JoinFuncs[F ~func(R) (string, error), R any](caller string, fns ...F) F {
	pkg, name := splitCaller(caller)
	if len(fns) == 0 {
		panic(fmt.Sprintf("%s: %s needs at least one key function", pkg, name))
	}
	for i, fn := range fns {
		if fn == nil {
			panic(fmt.Sprintf("%s: %s: key function %d is nil", pkg, name, i))
		}
	}
	fns = append([]F(nil), fns...) // the caller may reuse its slice
	return func(r R) (string, error) {
		// Parts are gathered first so the result is built in one allocation.
		var small [4]string
		parts := small[:0]
		if len(fns) > len(small) {
			parts = make([]string, 0, len(fns))
		}
		for i, fn := range fns {
			k, err := fn(r)
			if err != nil {
				return "", err
			}
			if k == "" {
				return "", fmt.Errorf("%w: %s: key function %d returned an empty key", ErrNoKey, name, i)
			}
			parts = append(parts, k)
		}
		return JoinParts(parts...), nil
	}
}

// splitCaller splits "pkg.Func" for JoinFuncs' messages. A name without a
// package is taken to be keyfunc's.
func splitCaller(caller string) (pkg, name string) {
	if caller == "" {
		return "keyfunc", "JoinFuncs"
	}
	if i := strings.LastIndexByte(caller, '.'); i >= 0 {
		return caller[:i], caller[i+1:]
	}
	return "keyfunc", caller
}

// JoinParts writes parts in the encoding Join uses: each part as its length
// in decimal, a colon, and the part itself, so JoinParts("a:b", "c") and
// JoinParts("a", "b:c") differ. Adapters for other transports use it so that
// their joined keys are built the same way. It does not reject empty parts
// (encoded "0:"); key functions should, as Join does.
func JoinParts(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + decimalLen(len(p)) + 1
	}
	var b strings.Builder
	b.Grow(n)
	var num [20]byte
	for _, p := range parts {
		b.Write(strconv.AppendInt(num[:0], int64(len(p)), 10))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

func decimalLen(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
