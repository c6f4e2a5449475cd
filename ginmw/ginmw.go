package ginmw

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/keyfunc"
)

// New returns Gin middleware for l, a Limiter configured with httpmw.New
// (its limiter, key function and options), so that one Limiter, and the
// quota it keeps, can serve net/http and Gin handlers alike:
//
//	r.Use(ginmw.New(httpmw.MustNew(lim, keyfunc.MustClientIP())))
//
// Before it runs l, it records the matched route's template (c.FullPath(),
// such as "/users/:id") in c.Request.Pattern, where net/http's ServeMux
// records its own, so that keyfunc.Route keys every /users/… request by
// "/users/:id". It panics if l is nil.
func New(l *httpmw.Limiter) gin.HandlerFunc {
	if l == nil {
		panic(errors.New("ginmw: nil *httpmw.Limiter; make one with httpmw.New"))
	}
	return func(c *gin.Context) {
		if route := c.FullPath(); route != "" {
			c.Request.Pattern = route
		}
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

// LimitByIP is httpmw.LimitByIP for Gin: middleware that limits each
// client IP address (the socket peer; IPv6 by /64) to limit, in memory,
// with httpmw's options.
//
//	r.Use(ginmw.LimitByIP(core.PerMinute(100)))
//
// It panics with a message saying what to fix when limit or an option is
// invalid: it is meant for set-up code.
func LimitByIP(limit core.Limit, opts ...httpmw.Option) gin.HandlerFunc {
	lim, err := core.New(limit)
	if err != nil {
		panic("ginmw: LimitByIP: " + err.Error())
	}
	return New(httpmw.MustNew(lim, keyfunc.MustClientIP(), opts...))
}
