// Package fields formats the rate-limit fields of a core.Decision —
// X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset,
// RateLimit-Policy, RateLimit and Retry-After — once, for every transport:
// httpmw writes them as HTTP headers, grpcmw as gRPC metadata, with the same
// values for the same Decision.
//
// What depends only on a Limit (its name, quota and window) is formatted
// once per Limit and kept in a [Cache]; what changes per request (the
// remaining quota and the waits) is formatted per request, without
// allocating. [Put] is the request path's writer: it formats the text into
// a slab and sets each field in an http.Header or a metadata.MD under its
// name, in a value slot of its own:
//
//	fields.Put(w.Header(), fields.HTTPKeys, &d, policy, core.HeadersBoth, "")
//
// [Values.Format] gives the same values one by one, into a stack buffer,
// for callers that want them apart:
//
//	var v fields.Values
//	v.Format(d, policy, core.HeadersBoth)
//	text := string(v.Text())
//	for i := 0; i < v.Len(); i++ {
//		f, val := v.Field(i, text)
//		fmt.Println(f.HTTP(), val)
//	}
package fields
