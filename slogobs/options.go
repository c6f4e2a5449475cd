package slogobs

import (
	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/option"
)

// Option configures an [Observer] made by [New].
type Option func(*options)

// DefaultMaxPerSecond is how many lines of each kind an Observer writes in
// a second unless [WithMaxPerSecond] says otherwise.
const DefaultMaxPerSecond = 10

type options struct {
	perSecond int                 // 0: no sampling
	redact    func(string) string // nil: the salted hash
	clock     core.Clock
	errs      option.Errors
}

// WithMaxPerSecond sets how many lines of each kind (each outcome, and
// shadow mode's would-be outcomes apart from enforced ones) are written
// in one second of the clock (default [DefaultMaxPerSecond], 10). Beyond
// that, lines are counted and dropped, and the next line of the kind
// written carries the count as "suppressed". A flood of refusals then
// costs a few lines a second, not one a request.
//
// n = 0 turns sampling off: every event that is logged gets its line.
// Under an attack that is a line per refused request.
func WithMaxPerSecond(n int) Option {
	return func(o *options) {
		if o.errs.Require(n >= 0, "WithMaxPerSecond(%d): want the lines a second, or 0 to write every line", n) {
			o.perSecond = n
		}
	}
}

// WithKeyRedaction sets the function that turns a request's key into what
// the line shows as "key" (default: a hash of the key with a salt drawn
// when the Observer is made, so that one key gives one token for the
// life of the process, and no two processes agree). It also replaces the
// key where an error's text quotes it (keys of 4 bytes or more).
//
// To show keys as they are, pass a function that returns its argument.
// Keys are IP addresses, API keys or user IDs: do so only where the logs
// may hold personal data and secrets.
func WithKeyRedaction(f func(key string) string) Option {
	return func(o *options) {
		if o.errs.Require(f != nil, "WithKeyRedaction(nil); leave the option out for the salted hash, or pass func(k string) string { return k } to show keys as they are") {
			o.redact = f
		}
	}
}

// withClock sets the clock that times the sampler's one-second windows
// (default core.SystemClock); tests reach it through export_test.go.
func withClock(c core.Clock) Option {
	return func(o *options) { o.clock = c }
}
