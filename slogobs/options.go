package slogobs

import (
	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures an [Observer] made by [New].
type Option func(*options)

// DefaultMaxPerSecond is how many lines of each kind an Observer writes in
// a second unless [WithMaxPerSecond] or [WithoutSampling] says otherwise.
const DefaultMaxPerSecond = 10

type options struct {
	perSecond int // 0: no sampling
	allowed   bool
	redact    func(string) string // nil: the salted hash
	raw       bool
	clock     core.Clock
	errs      option.Errors
}

// WithMaxPerSecond sets how many lines of each kind (each outcome, and
// shadow mode's would-be outcomes apart from enforced ones) are written
// in one second of the clock (default [DefaultMaxPerSecond], 10). Beyond
// that, lines are counted and dropped, and the next line of the kind
// written carries the count as "suppressed". A flood of refusals then
// costs a few lines a second, not one a request.
func WithMaxPerSecond(n int) Option {
	return func(o *options) {
		if o.errs.Require(n >= 1, "WithMaxPerSecond(%d): at least 1 line a second must be allowed; use WithoutSampling to write every line", n) {
			o.perSecond = n
		}
	}
}

// WithoutSampling writes a line for every event that is logged. Under an
// attack that is a line per refused request: prefer [WithMaxPerSecond].
func WithoutSampling() Option {
	return func(o *options) { o.perSecond = 0 }
}

// WithAllowed also logs admitted requests (allowed and shaped), at Debug
// level and sampled like the rest. By default they are not logged.
func WithAllowed() Option {
	return func(o *options) { o.allowed = true }
}

// WithKeyRedaction sets the function that turns a request's key into what
// the line shows as "key" (default: a hash of the key with a salt drawn
// when the Observer is made, so that one key gives one token for the
// life of the process, and no two processes agree). It also replaces the
// key where an error's text quotes it (keys of 4 bytes or more).
func WithKeyRedaction(f func(key string) string) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithKeyRedaction(nil); leave the option out for the salted hash, or use WithRawKeys") {
			o.redact, o.raw = f, false
		}
	}
}

// WithRawKeys shows keys as they are. Keys are IP addresses, API keys or
// user IDs: only use it where the logs may hold personal data and
// secrets.
func WithRawKeys() Option {
	return func(o *options) { o.raw, o.redact = true, nil }
}

// WithClock sets the clock that times the sampler's one-second windows
// (default core.SystemClock). Tests pass a coretest.Clock.
func WithClock(c core.Clock) Option {
	return func(o *options) {
		if o.errs.Require(c != nil, "WithClock(nil); leave the option out for the system clock") {
			o.clock = c
		}
	}
}
