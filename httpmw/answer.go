package httpmw

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/fields"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// answer is a complete fixed response: a status and a plain-text body with
// its Content-Length formatted once. Answers never carry error text, which
// can hold internal details (addresses, store names); the error handler
// sees the error.
type answer struct {
	status int
	body   fixedBody
}

// newAnswer returns status with its status text and, when detail is not
// empty, ": detail" as the body.
func newAnswer(status int, detail string) answer {
	text := http.StatusText(status)
	if detail != "" {
		text += ": " + detail
	}
	return answer{status, newFixedBody([]byte(text + "\n"))}
}

// The default answers of writeDenied and writeError.
var (
	answerDenied      = newAnswer(http.StatusTooManyRequests, "")
	answerKeyTooLarge = newAnswer(http.StatusRequestHeaderFieldsTooLarge, "the request's rate-limit key is too large")
	answerBadCost     = newAnswer(http.StatusBadRequest, "the request's rate-limit cost is invalid")
	answerCostTooHigh = newAnswer(http.StatusRequestEntityTooLarge, "the request costs more than the rate limit can ever admit at once; retrying will not help")
	answerInternal    = newAnswer(http.StatusInternalServerError, "")
	answerUnavailable = newAnswer(http.StatusServiceUnavailable, "")
	answerShed        = newAnswer(http.StatusServiceUnavailable, "the service is overloaded; retry after the Retry-After header's seconds")
)

// refusedStatus is the status of the default answer to a refusal: 503 for
// a shed (an overload guard refused: the service, not the client's quota,
// is short), 429 otherwise.
func refusedStatus(d *core.Decision) int {
	if d.Shed {
		return http.StatusServiceUnavailable
	}
	return http.StatusTooManyRequests
}

// writeDenied answers a refused request: the deny handler if one is set
// (a shed too: d.Shed tells it), otherwise status 429 with a plain-text
// body, or 503 for a shed. It does not set Retry-After or the rate-limit
// headers itself: check has set them.
func (l *Limiter) writeDenied(w http.ResponseWriter, r *http.Request, d core.Decision) {
	switch {
	case l.o.deny != nil:
		l.o.deny(w, r, d)
	case d.Shed:
		writeBody(w, answerShed.status, "text/plain; charset=utf-8", answerShed.body)
	default:
		writeBody(w, answerDenied.status, "text/plain; charset=utf-8", answerDenied.body)
	}
}

// writeError answers a request for which no decision could be made: the
// error handler if one is set, otherwise a plain-text answer by the kind
// of err, as [Limiter.Enter] describes.
func (l *Limiter) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if l.o.onError != nil {
		l.o.onError(w, r, err)
		return
	}
	a := l.errorAnswer(err)
	if a.status == http.StatusTooManyRequests {
		setRetryAfterOne(w.Header())
	}
	writeBody(w, a.status, "text/plain; charset=utf-8", a.body)
}

// writeErrorHeaders returns the status of writeError's default answer to
// err and sets on h the headers that answer carries besides its body
// (Retry-After: 1 for a store failure).
func (l *Limiter) writeErrorHeaders(h http.Header, err error) (status int) {
	a := l.errorAnswer(err)
	if a.status == http.StatusTooManyRequests {
		setRetryAfterOne(h)
	}
	return a.status
}

// setRetryAfterOne sets the store-failure answer's Retry-After: 1, in a
// value slot of its own from a slab (a store outage makes this a hot path).
func setRetryAfterOne(h http.Header) {
	vals, _ := fields.Take(1, nil)
	vals[0] = "1"
	h["Retry-After"] = vals
}

func (l *Limiter) errorAnswer(err error) answer {
	switch pipeline.Classify(err) {
	case core.OutcomeBadKey:
		if errors.Is(err, core.ErrKeyTooLarge) {
			return answerKeyTooLarge
		}
		return l.badKey
	case core.OutcomeBadCost:
		if errors.Is(err, core.ErrCostTooLarge) {
			return answerCostTooHigh
		}
		return answerBadCost
	case core.OutcomeStoreError:
		return answerDenied
	case core.OutcomeCanceled:
		return answerUnavailable
	}
	return answerInternal
}

// writeBody writes a complete fixed response, as http.Error does, but with
// an exact Content-Length and the given type. Its header values come from a
// slab too: denials are the hot path when a client floods.
func writeBody(w http.ResponseWriter, status int, contentType string, body fixedBody) {
	h := w.Header()
	vals, _ := fields.Take(3, nil)
	vals[0], vals[1], vals[2] = contentType, body.length, "nosniff"
	h["Content-Type"] = vals[0:1:1]
	h["Content-Length"] = vals[1:2:2]
	h["X-Content-Type-Options"] = vals[2:3:3]
	w.WriteHeader(status)
	_, _ = w.Write(body.bytes)
}

// fixedBody is a response body with its Content-Length formatted once.
type fixedBody struct {
	bytes  []byte
	length string
}

func newFixedBody(b []byte) fixedBody { return fixedBody{b, strconv.Itoa(len(b))} }
