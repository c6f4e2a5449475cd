// Package pipeline is the one request pipeline every adapter runs: skip →
// key → cost → limiter → failure mode → shaping wait → observer, generic
// over the transport's request type. It returns a [Result] saying how the
// request ended ([core.Outcome]); the adapters (httpmw, and through it
// ginmw and echomw; grpcmw) only translate that result into their wire
// form, so every transport classifies, charges, waits and reports alike.
//
// It also holds what the adapters share beyond one decision: the limiter
// chosen per request (Config.Select), denials held before their answer
// (Config.Hold), leases given back when a request ends ([End], [Undo]),
// and the charge records through which a floodgate nested inside another
// refunds the outer one when it refuses a request ([Attach]; [Pipeline.Run]
// refunds them).
//
// Shadow (dry-run) mode is a setting of the adapter (Config.Shadow): every
// request is decided, charged and observed as enforcing would, and
// admitted, so that a failure before the limiter is asked admits too. The
// Result carries the decision enforcing would have made, and
// Result.ShadowDecision the shadow one the caller hands on.
package pipeline
