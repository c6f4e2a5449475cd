package keyfunc

import (
	"net/http"

	"github.com/floodgate/floodgate/internal/clientip"
)

// ClientIP keys by the client's IP address.
//
// By default the key is the socket peer (http.Request.RemoteAddr) and no
// header is read: headers are written by the client, so trusting them
// from anyone lets every request pick a fresh key. With WithTrustedProxies,
// a request whose peer is a trusted proxy is keyed by the proxy header
// (WithHeader, default X-Forwarded-For), read as follows:
//
//   - every line of the header counts, in order, as one list;
//   - the list is walked right to left and trusted addresses are skipped;
//     the first untrusted address is the client;
//   - if every address is trusted, the leftmost is the client; a trusted
//     peer that sent no header is itself the client;
//   - a malformed item, "unknown", or an obfuscated identifier ("_hidden")
//     reached before the client is an error matching ErrInvalidHeader,
//     never the proxy's own address;
//   - ports, brackets, IPv6 zones and surrounding spaces are stripped, and
//     IPv4-mapped IPv6 addresses count as IPv4;
//   - a walk that passes 64 items or 8 KiB without finding the client
//     stops with an error matching core.ErrKeyTooLarge.
//
// An IPv4 key is the dotted quad ("203.0.113.7"), or the masked network
// in CIDR form when WithPrefixes sets fewer than 32 bits. An IPv6 key is the masked
// prefix in canonical form ("2001:db8:1:2::/64", see WithPrefixes). A
// RemoteAddr that is not an IP address (a Unix socket) is an error matching
// ErrInvalidRemoteAddr.
//
// ClientIP returns an error, starting with "keyfunc: ", for invalid
// options, and for WithHeader without WithTrustedProxies (which would read
// nothing).
func ClientIP(opts ...Option) (Func, error) {
	res, err := clientip.New(opts...)
	if err != nil {
		return nil, err
	}
	header := res.Header()
	if header == "" {
		// No proxy is trusted, so no header is read: skip the lookup.
		return func(r *http.Request) (string, error) {
			return res.Resolve(r.RemoteAddr, nil)
		}, nil
	}
	return func(r *http.Request) (string, error) {
		return res.Resolve(r.RemoteAddr, r.Header[header])
	}, nil
}

// MustClientIP is like ClientIP but panics on invalid options, for
// package-level variables.
func MustClientIP(opts ...Option) Func {
	f, err := ClientIP(opts...)
	if err != nil {
		panic(err)
	}
	return f
}
