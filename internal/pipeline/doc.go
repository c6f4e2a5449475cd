// Package pipeline is the one request pipeline every adapter runs: skip →
// key → cost → limiter → failure mode → shaping wait → observer, generic
// over the transport's request type. It returns a [Result] saying how the
// request ended ([core.Outcome]); the adapters (httpmw, and through it
// ginmw and echomw; grpcmw) only translate that result into their wire
// form, so every transport classifies, charges, waits and reports alike.
package pipeline
