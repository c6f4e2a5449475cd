package httpclient

import (
	"io"
	"net/http"
	"slices"
	"time"
)

// RetryTransport is an http.RoundTripper that sends a request again when
// the response's status asks for a retry (429 and 503 by default), after
// the wait the response asks for. Make one with NewRetryTransport. It is
// safe for concurrent use.
type RetryTransport struct {
	next http.RoundTripper
	o    *options
}

// retryOptions are the options NewRetryTransport takes.
var retryOptions = []string{"WithMaxAttempts", "WithBackoff", "WithMaxWait", "WithRand", "WithSleep", "WithClock", "WithStatusCodes", "WithRetryable", "WithThrottle"}

// NewRetryTransport returns a RetryTransport that sends requests through
// next (http.DefaultTransport when nil).
//
// A response with a status of WithStatusCodes (default 429 and 503) is
// retried, up to WithMaxAttempts sends in all, when the request is
// retryable (WithRetryable; default Idempotent) and its body can be
// replayed: it has none, or req.GetBody makes a new one (http.NewRequest
// sets GetBody for bytes, strings and bytes.Buffer bodies). Before retry n
// the transport waits the delay the response asks for (see RetryDelay:
// Retry-After first, else the RateLimit fields) plus a random jitter of up
// to min(max, base·2^(n-1)) (WithBackoff); a response without a delay gets
// the jitter alone, a capped exponential backoff with full jitter.
//
// It gives up and returns the last response, unread, when the attempts are
// spent, when the delay is longer than WithMaxWait's each or would take
// the request's waits past its total, or when the delay would reach the
// request's deadline. The responses it retries are drained (up to
// 64 KiB, so that the connection can be reused) and closed. When the
// request's context ends during a wait, the wait stops at once and
// RoundTrip returns the context's error.
//
// With WithThrottle, each attempt asks an overload.Throttle first, and a
// request it rejects fails unsent with an error matching
// overload.ErrThrottled.
//
// It returns an error for invalid options, or options that do not apply.
func NewRetryTransport(next http.RoundTripper, opts ...Option) (*RetryTransport, error) {
	o, err := newOptions(opts, "NewRetryTransport", retryOptions)
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &RetryTransport{next: next, o: o}, nil
}

// Idempotent reports whether a request may be sent more than once: its
// method is idempotent by RFC 9110 (GET, HEAD, OPTIONS, TRACE, PUT,
// DELETE), or it carries an Idempotency-Key header. It is
// NewRetryTransport's default for WithRetryable.
func Idempotent(r *http.Request) bool {
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, ok := r.Header["Idempotency-Key"]
	return ok
}

// replayable reports whether req's body can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// drainLimit is how much of a discarded response is read so that its
// connection can carry the next request; a longer body costs more to read
// than a new connection.
const drainLimit = 64 << 10

// discard drains and closes a response that is not returned.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	_ = resp.Body.Close()
}

// RoundTrip sends req, and sends it again as NewRetryTransport describes.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.o.send(t.next, req)
	if err != nil || t.o.Attempts == 1 || !t.retries(resp) || !replayable(req) || !t.o.retryable(req) {
		return resp, err
	}
	ctx := req.Context()
	var spent time.Duration
	for n := 1; n < t.o.Attempts && t.retries(resp); n++ {
		hint, _ := RetryDelay(resp.Header, time.Unix(0, t.o.clock.Now()))
		d, ok := t.o.Wait(ctx, n, hint, spent)
		if !ok {
			return resp, nil
		}
		retry := req.Clone(ctx)
		if req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return resp, nil
			}
			retry.Body = body
		}
		discard(resp)
		if err := t.o.Sleep(ctx, d); err != nil {
			closeBody(retry)
			return nil, err
		}
		spent += d
		if resp, err = t.o.send(t.next, retry); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// retries reports whether resp's status is one to retry.
func (t *RetryTransport) retries(resp *http.Response) bool {
	return slices.Contains(t.o.statuses, resp.StatusCode)
}

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}
