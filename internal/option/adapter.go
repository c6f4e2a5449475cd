package option

import (
	"errors"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// Adapter is the configuration the adapters (httpmw, and through it ginmw
// and echomw; grpcmw) share, set by their With… options through the
// methods below, so that an option of the same name checks the same
// things, says the same when it is wrong and means the same on every
// transport. R is the request type of the adapter's pipeline; options of
// other shapes (grpcmw's functions of ctx and method) are turned into
// functions of R by the adapter.
type Adapter[R any] struct {
	Errors
	// Pipeline is what the adapter's pipeline runs; the adapter sets its
	// Transport and Key.
	Pipeline pipeline.Config[R]
	// Headers is the rate-limit field style (WithHeaders); HeadersSet
	// reports that it was given, which shadow mode needs to send the
	// fields at all.
	Headers    core.HeaderStyle
	HeadersSet bool
	// RefundInner records each admission's charge in the request's
	// context (WithRefundOnInnerRefusal).
	RefundInner bool
}

// Cost is WithCost(f).
func (a *Adapter[R]) Cost(f func(R) (int, error)) {
	if a.Require(f != nil, "WithCost(nil); leave the option out for a cost of 1") {
		a.Pipeline.Cost = f
	}
}

// Skip is WithSkip(f); nil skips nothing, in every adapter.
func (a *Adapter[R]) Skip(f func(R) bool) { a.Pipeline.Skip = f }

// FailureMode is WithFailureMode(m).
func (a *Adapter[R]) FailureMode(m core.FailureMode) {
	if a.Require(m.Valid(), "WithFailureMode(%d): unknown mode; use core.FailClosed or core.FailOpen", int(m)) {
		a.Pipeline.Failure = m
	}
}

// HeaderStyle is WithHeaders(s).
func (a *Adapter[R]) HeaderStyle(s core.HeaderStyle) {
	if a.Require(s.Valid(), "WithHeaders(%d): unknown style; use core.HeadersBoth, HeadersLegacy, HeadersIETF or HeadersNone", int(s)) {
		a.Headers, a.HeadersSet = s, true
	}
}

// Observer is WithObserver(obs).
func (a *Adapter[R]) Observer(obs core.Observer) {
	if a.Require(obs != nil, "WithObserver(nil); leave the option out for no observer") {
		a.Pipeline.Observer = obs
	}
}

// DenialHold is WithDenialHold(max, concurrent).
func (a *Adapter[R]) DenialHold(max time.Duration, concurrent int) {
	h := pipeline.Hold{Max: max, Concurrent: concurrent}
	if p := h.Problem(); a.Require(p == "", "WithDenialHold(%v, %d): %s", max, concurrent, p) {
		a.Pipeline.Hold = h
	}
}

// LimiterFunc is WithLimiterFunc(f).
func (a *Adapter[R]) LimiterFunc(f func(R) core.Limiter) {
	if a.Require(f != nil, "WithLimiterFunc(nil); leave the option out to limit every request with the limiter given to New") {
		a.Pipeline.Select = f
	}
}

// Shadow is WithShadow().
func (a *Adapter[R]) Shadow() { a.Pipeline.Shadow = true }

// RefundOnInnerRefusal is WithRefundOnInnerRefusal().
func (a *Adapter[R]) RefundOnInnerRefusal() { a.RefundInner = true }

// Validate checks what New was given besides the options: a key function
// (example names one that would do), and a limiter unless WithLimiterFunc
// chooses one per request, when none may be given (the function's nil
// means "not limited", never "the one given to New").
func (a *Adapter[R]) Validate(lim core.Limiter, keyGiven bool, example string) error {
	switch {
	case !keyGiven:
		return errors.New(a.Prefix + "nil key function; pass one such as " + example)
	case lim == nil && a.Pipeline.Select == nil:
		return errors.New(a.Prefix + "nil core.Limiter; make one with core.New, or choose one per request with WithLimiterFunc")
	case lim != nil && a.Pipeline.Select != nil:
		return errors.New(a.Prefix + "a core.Limiter and WithLimiterFunc; pass nil as the limiter and return it from the function where it applies")
	}
	return nil
}
