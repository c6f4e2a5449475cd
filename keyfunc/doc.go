// Package keyfunc derives rate-limit keys from requests: who or what a
// limit counts. A key function is passed explicitly to every middleware,
// so each call site states on purpose what it limits by.
//
//	byIP := keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8"))
//	perRoute := keyfunc.Join(byIP, keyfunc.Route())
//
// A key function never answers "no key, so no limit": a request it cannot
// key is an error (see ErrNoKey and the other Err values) that the
// middleware's error handler answers. Error texts quote request data only
// briefly, so they are safe to log.
//
// # Client IP and proxies
//
// ClientIP keys by the socket peer (RemoteAddr) unless told which proxies
// to trust. Forwarding headers such as X-Forwarded-For are written by
// whoever sends the request; a limiter that believes them from any peer
// can be bypassed by sending a new made-up address on every request, or
// turned against a victim by sending theirs. This is how
// go-chi/httprate's KeyByRealIP came to be deprecated (GHSA-9g5q-2w5x-hmxf).
// So headers are read only from peers inside WithTrustedProxies ranges,
// only the one header named by WithHeader, and walked from the right, past
// the trusted hops, to the first address no trusted proxy vouches for.
// Whatever a client writes on the left of the list is never reached.
//
// IPv6 clients are keyed by network prefix (a /64 by default), since one
// host typically owns a whole /64 and could otherwise rotate through
// addresses to escape its limit.
//
// grpcmw.KeyByPeerIP applies the same rules, with the same options
// (keyfunc.WithTrustedProxies and the others), to a gRPC peer and its
// x-forwarded-for metadata; grpcmw.JoinKeys joins keys in Join's encoding.
//
// # Per-route keys
//
// Route keys by the template of the matched route, so /users/1 and
// /users/2 share /users/{id}'s limit: net/http's ServeMux pattern, and
// Gin's and Echo's route templates, which ginmw and echomw record. Under
// net/http the pattern is known once the ServeMux has matched: put the
// middleware on the routes (mux.Handle(pattern, l.Handler(h))), not around
// the mux. A request that matched no route keys as its URL path.
//
// # Cost
//
// Key functions run on every request. ClientIP with default options
// allocates nothing for an IPv4 peer; resolving through proxies allocates
// only the key string. Header, Route and Method return request data as
// is, bounded by 4096 bytes so a store entry stays small.
package keyfunc
