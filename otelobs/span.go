package otelobs

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/floodgate/floodgate/core"
)

// The span events: a refusal and a store error are added to the span the
// request's context carries, which the application's tracing (otelhttp,
// otelgrpc) started, so that a trace shows why a request ended early or
// took the failure mode's path. Nothing is built when that span is not
// recording: then an event costs a context lookup.

// Span events' names and attribute keys. The keys carry the "floodgate."
// prefix, unlike the metrics' attributes, because a span gathers
// attributes from every library that touches the request.
const (
	eventDenied     = "floodgate.denied"
	eventStoreError = "floodgate.store_error"

	keyLimit      = attribute.Key("floodgate.limit")
	keyRemaining  = attribute.Key("floodgate.remaining")
	keyRetryAfter = attribute.Key("floodgate.retry_after") // seconds
	keyHeld       = attribute.Key("floodgate.held")        // seconds
	keyShadow     = attribute.Key("floodgate.shadow")
	keyFailure    = attribute.Key("floodgate.failure")
	keyAdmitted   = attribute.Key("floodgate.admitted")
)

// refusalEvent adds "floodgate.denied" to the span of ctx: the limit that
// refused, what it had left, when to retry, how long the refusal was held
// if it was, and shadow=true when shadow mode admitted the request anyway.
func refusalEvent(ctx context.Context, e *core.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 3, 5)
	attrs[0] = keyLimit.String(e.Decision.Limit.Name)
	attrs[1] = keyRemaining.Int(e.Decision.Remaining)
	attrs[2] = keyRetryAfter.Float64(e.Decision.RetryAfter.Seconds())
	if e.Held > 0 {
		attrs = append(attrs, keyHeld.Float64(e.Held.Seconds()))
	}
	if e.Shadow {
		attrs = append(attrs, keyShadow.Bool(true))
	}
	span.AddEvent(eventDenied, trace.WithAttributes(attrs...))
}

// storeErrorEvent adds "floodgate.store_error" to the span of ctx: the
// failure mode applied, whether the request went through, and the limit
// when the event names one (the service's descriptors do). The error's
// text is left out: it can quote the key.
func storeErrorEvent(ctx context.Context, e *core.Event) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 2, 4)
	attrs[0] = keyFailure.String(e.Failure.String())
	attrs[1] = keyAdmitted.Bool(e.Admitted)
	if e.Decision.Limit.Name != "" {
		attrs = append(attrs, keyLimit.String(e.Decision.Limit.Name))
	}
	if e.Shadow {
		attrs = append(attrs, keyShadow.Bool(true))
	}
	span.AddEvent(eventStoreError, trace.WithAttributes(attrs...))
}
