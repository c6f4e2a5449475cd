package echomw

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/option"
	"github.com/floodgate/floodgate/keyfunc"
)

// Option configures the middleware New makes: what Echo users expect of a
// middleware beside httpmw's options, which configure the Limiter.
type Option func(*options)

type options struct {
	skip       middleware.Skipper
	httpErrors bool
}

// WithSkip exempts the requests for which s, an Echo Skipper, returns
// true, before anything else runs: they are neither counted nor limited
// and get no rate-limit headers. A nil s skips nothing, which is the
// default (middleware.DefaultSkipper), as in httpmw.WithSkip, which does
// the same on the *http.Request, and grpcmw.WithSkip.
func WithSkip(s middleware.Skipper) Option {
	// Decided here, not in the option: one Option may be applied by
	// several New calls at once, which must not write what it captured.
	if s == nil {
		s = middleware.DefaultSkipper
	}
	return func(o *options) { o.skip = s }
}

// WithHTTPErrors makes the middleware return refusals and errors as
// *echo.HTTPError rather than write them, so that the application's
// HTTPErrorHandler renders them like its other errors. A refusal is Code
// 429 with Internal [ErrDenied] (a shed, core.Decision.Shed: 503 with
// [ErrShed]); an error has the status httpmw would
// answer (see httpmw.Limiter.Enter) and the cause as Internal, for logs:
// Echo's DefaultHTTPErrorHandler shows Internal only when Echo.Debug is
// on, and an application's own handler should not show it either. Either
// way Message is the status text, and the rate-limit headers and
// Retry-After are already set on c.Response(). The Limiter's deny and
// error handlers are not used.
func WithHTTPErrors() Option {
	return func(o *options) { o.httpErrors = true }
}

// ErrDenied is the Internal error of the *echo.HTTPError returned for a
// refused request under WithHTTPErrors, so that an error handler can tell
// it apart with errors.Is from other 429s.
var ErrDenied = errors.New("echomw: rate limit exceeded")

// ErrShed is the Internal error of the *echo.HTTPError returned for a
// request an overload guard shed (core.Decision.Shed) under
// WithHTTPErrors: the service, not the client's quota, was short.
var ErrShed = errors.New("echomw: service overloaded")

// New returns Echo middleware for l, a Limiter configured with httpmw.New
// (its limiter, key function and options), for e.Use, a group or one
// route:
//
//	e.Use(echomw.New(httpmw.MustNew(lim, keyfunc.MustClientIP())))
//
// Before it runs l, it records the matched route's template (c.Path(),
// such as "/users/:id") in the request's Pattern, where net/http's
// ServeMux records its own, so that keyfunc.Route keys every /users/…
// request by "/users/:id". It panics if l or an option is nil.
func New(l *httpmw.Limiter, opts ...Option) echo.MiddlewareFunc {
	if l == nil {
		panic(errors.New("echomw: nil *httpmw.Limiter; make one with httpmw.New"))
	}
	o := options{skip: middleware.DefaultSkipper}
	if err := option.Apply(&o, &option.Errors{Prefix: "echomw: "}, opts); err != nil {
		panic(err)
	}
	skip := o.skip
	if !o.httpErrors {
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if skip(c) {
					return next(c)
				}
				r := route(c)
				a := l.Enter(c.Response(), r)
				if !a.Admitted() {
					return nil
				}
				defer a.End()
				if a.Request() != r {
					c.SetRequest(a.Request())
				}
				return next(c)
			}
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			r := route(c)
			a, err := l.Check(c.Response().Header(), r)
			switch {
			case a.Admitted():
				defer a.End()
				if a.Request() != r {
					c.SetRequest(a.Request())
				}
				return next(c)
			case err == nil && a.Decision.Shed:
				err = ErrShed
			case err == nil:
				err = ErrDenied
			}
			return &echo.HTTPError{Code: a.Status(), Message: http.StatusText(a.Status()), Internal: err}
		}
	}
}

// route returns c's request with the matched route's template recorded in
// its Pattern.
func route(c echo.Context) *http.Request {
	r := c.Request()
	if p := c.Path(); p != "" {
		r.Pattern = p
	}
	return r
}

// LimitByIP is httpmw.LimitByIP for Echo: middleware that limits each
// client IP address (the socket peer; IPv6 by /64) to limit, in memory,
// with httpmw's options.
//
//	e.Use(echomw.LimitByIP(core.PerMinute(100)))
//
// It panics with a message saying what to fix when limit or an option is
// invalid: it is meant for set-up code.
func LimitByIP(limit core.Limit, opts ...httpmw.Option) echo.MiddlewareFunc {
	lim, err := core.New(limit)
	if err != nil {
		panic("echomw: LimitByIP: " + err.Error())
	}
	return New(httpmw.MustNew(lim, keyfunc.MustClientIP(), opts...))
}
