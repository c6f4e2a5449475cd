package ginmw

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// New returns Gin middleware that limits requests by key through lim.
// key is required, so that every call site says what it limits by; opts
// are httpmw's, with the same defaults (see [httpmw.New]). It returns an
// error for a nil lim or key and for invalid options.
func New(lim core.Limiter, key keyfunc.Func, opts ...httpmw.Option) (gin.HandlerFunc, error) {
	l, err := httpmw.New(lim, key, opts...)
	if err != nil {
		return nil, err
	}
	return Handler(l), nil
}

// MustNew is like [New] but panics on error. It is meant for set-up code
// whose arguments are constants, such as route tables.
func MustNew(lim core.Limiter, key keyfunc.Func, opts ...httpmw.Option) gin.HandlerFunc {
	h, err := New(lim, key, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// Handler returns Gin middleware for a configured httpmw.Limiter, so that
// one Limiter, and the quota it keeps, can serve net/http and Gin handlers
// alike. It panics if l is nil.
func Handler(l *httpmw.Limiter) gin.HandlerFunc {
	if l == nil {
		panic(errors.New("ginmw: nil *httpmw.Limiter; make one with httpmw.New, or use ginmw.New"))
	}
	return func(c *gin.Context) {
		// Gin's ResponseWriter shares the underlying header map and defers
		// the status line to the first write, so headers set here go out
		// with whatever the rest of the chain answers.
		a := l.Enter(c.Writer, c.Request)
		if !a.Admitted() {
			c.Abort()
			return
		}
		// The rest of the chain runs inside c.Next, so the admission ends
		// when it returns or panics.
		defer a.End()
		c.Request = a.Request()
		c.Next()
	}
}
