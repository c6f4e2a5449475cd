// Package fields formats the rate-limit fields of a core.Decision —
// X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset,
// RateLimit-Policy, RateLimit and Retry-After — once, for every transport:
// httpmw writes them as HTTP headers, grpcmw as gRPC metadata, with the same
// values for the same Decision.
//
// What depends only on a Limit (its name, quota and window) is formatted
// once per Limit and kept in a [Cache]; what changes per request (the
// remaining quota and the waits) is formatted by [Values.Format] into a
// stack buffer, without allocating. The caller copies the text into storage
// it owns, then reads the values with [Values.Field].
//
//	var v fields.Values
//	v.Format(d, policy, core.HeadersBoth)
//	text := string(v.Text()) // httpmw carves it from a slab instead
//	for i := 0; i < v.Len(); i++ {
//		f, val := v.Field(i, text)
//		md[f.Metadata()] = []string{val}
//	}
package fields
