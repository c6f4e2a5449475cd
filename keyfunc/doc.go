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
// IPResolver applies the same rules to a peer address and header values
// that come from elsewhere than an *http.Request: package grpcmw feeds it a
// gRPC peer and its x-forwarded-for metadata. For the same reason JoinFuncs
// is Join for key functions of any request type, and JoinParts is Join's
// encoding.
//
// # Cost
//
// Key functions run on every request. ClientIP with default options
// allocates nothing for an IPv4 peer; resolving through proxies allocates
// only the key string. Header, Path, Route and Method return request data
// as is, bounded by MaxKeyLen so a store entry stays small.
package keyfunc
