package httpmw

import (
	"net/http"
	"time"
)

// requestContext is r's context, read from r only when something asks it.
// The in-memory limiter never does: on the common path (an allowed request,
// no observer) the request's context field, often on a cache line nothing
// else here reads, is never loaded. A struct holding one pointer is stored
// in an interface without an allocation.
//
// Every method asks r.Context(), which does not change for a given *Request
// (WithContext makes a new one), so a requestContext behaves as that
// context in every respect the context package relies on (Done's channel,
// Value, Err, Deadline; context.Cause and AfterFunc find its cancelCtx
// through Value).
type requestContext struct{ r *http.Request }

func (c requestContext) Deadline() (time.Time, bool) { return c.r.Context().Deadline() }
func (c requestContext) Done() <-chan struct{}       { return c.r.Context().Done() }
func (c requestContext) Err() error                  { return c.r.Context().Err() }
func (c requestContext) Value(key any) any           { return c.r.Context().Value(key) }
