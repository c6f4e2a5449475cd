// Package floodgate is a rate-limiting middleware collection for Go services.
//
// One framework-agnostic engine (package core) decides "may this key spend n
// units now?"; thin adapters put that decision in front of net/http handlers
// (httpmw) and answer a refusal with HTTP 429, Retry-After and the standard
// rate-limit headers, all written from the same core.Decision. Key functions
// (keyfunc) pick what is limited: the client IP, spoof-proof by default, an
// API key header, the route, or a join of several.
//
// This root package holds no code of its own: its tests check properties of
// the module as a whole, such as which packages may import which.
package floodgate
