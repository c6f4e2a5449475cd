package echomw

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// Config configures the middleware made by [NewWithConfig]. Limiter and
// KeyFunc are required; zero values of the other fields take
// [DefaultConfig]'s.
type Config struct {
	// Skipper exempts requests before anything else runs: they are neither
	// counted nor limited and get no rate-limit headers. Default:
	// middleware.DefaultSkipper, which skips nothing.
	Skipper middleware.Skipper

	// Limiter decides; core.New makes the in-memory one. Echo's rate
	// limiter calls this the Store.
	Limiter core.Limiter

	// KeyFunc says what a request is counted against (Echo's
	// IdentifierExtractor). It reads c.Request(); see the package
	// documentation for why c.RealIP is not the default.
	KeyFunc keyfunc.Func

	// Options are httpmw's options, with httpmw's defaults. With HTTPErrors
	// their deny and error handlers and problem details are not used:
	// the application's HTTPErrorHandler renders the answer.
	Options []httpmw.Option

	// HTTPErrors makes the middleware return refusals and errors as
	// *echo.HTTPError rather than write them. A refusal is Code 429 with
	// Internal [ErrDenied], and the rate-limit headers and Retry-After are
	// already set on c.Response(). An error has the status httpmw would
	// answer (see httpmw.Limiter.WriteError), the status text as Message,
	// and the cause as Internal, for logs: Echo's DefaultHTTPErrorHandler
	// shows Internal only when Echo.Debug is on, and an application's own
	// handler should not show it either.
	HTTPErrors bool
}

// DefaultConfig holds the defaults of the optional fields of [Config]. It
// names no Limiter or KeyFunc: each call site says what it limits by.
var DefaultConfig = Config{
	Skipper: middleware.DefaultSkipper,
}

// ErrDenied is the Internal error of the *echo.HTTPError returned for a
// refused request under Config.HTTPErrors, so that an error handler can
// tell it apart with errors.Is from other 429s.
var ErrDenied = errors.New("echomw: rate limit exceeded")

// New returns Echo middleware that limits requests by key through lim,
// answering as httpmw does; opts are httpmw's. It is [NewWithConfig] with
// [DefaultConfig] and these fields.
func New(lim core.Limiter, key keyfunc.Func, opts ...httpmw.Option) (echo.MiddlewareFunc, error) {
	cfg := DefaultConfig
	cfg.Limiter, cfg.KeyFunc, cfg.Options = lim, key, opts
	return NewWithConfig(cfg)
}

// MustNew is like [New] but panics on error. It is meant for set-up code
// whose arguments are constants, such as route tables.
func MustNew(lim core.Limiter, key keyfunc.Func, opts ...httpmw.Option) echo.MiddlewareFunc {
	return must(New(lim, key, opts...))
}

// NewWithConfig returns Echo middleware configured by cfg. It returns an
// error, saying what to set, when Limiter or KeyFunc is missing or an
// option is invalid.
func NewWithConfig(cfg Config) (echo.MiddlewareFunc, error) {
	if cfg.Limiter == nil {
		return nil, errors.New("echomw: no limiter (Config.Limiter is nil); make one with core.New")
	}
	if cfg.KeyFunc == nil {
		return nil, errors.New("echomw: no key function (Config.KeyFunc is nil); pass one from package keyfunc, such as keyfunc.MustClientIP()")
	}
	l, err := httpmw.New(cfg.Limiter, cfg.KeyFunc, cfg.Options...)
	if err != nil {
		return nil, err
	}
	skip := cfg.Skipper
	if skip == nil {
		skip = middleware.DefaultSkipper
	}
	if !cfg.HTTPErrors {
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if skip(c) {
					return next(c)
				}
				a := l.Enter(c.Response(), c.Request())
				if !a.Admitted() {
					return nil
				}
				defer a.End()
				c.SetRequest(a.Request())
				return next(c)
			}
		}, nil
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			h := c.Response().Header()
			a, err := l.Check(h, c.Request())
			switch {
			case a.Admitted():
				defer a.End()
				c.SetRequest(a.Request())
				return next(c)
			case err == nil:
				return &echo.HTTPError{Code: http.StatusTooManyRequests, Message: http.StatusText(http.StatusTooManyRequests), Internal: ErrDenied}
			}
			code := l.WriteErrorHeaders(h, err)
			return &echo.HTTPError{Code: code, Message: http.StatusText(code), Internal: err}
		}
	}, nil
}

// MustNewWithConfig is like [NewWithConfig] but panics on error.
func MustNewWithConfig(cfg Config) echo.MiddlewareFunc {
	return must(NewWithConfig(cfg))
}

func must(mw echo.MiddlewareFunc, err error) echo.MiddlewareFunc {
	if err != nil {
		panic(err)
	}
	return mw
}
