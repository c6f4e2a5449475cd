package httpclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/overload"
)

// WithThrottle makes NewRetryTransport ask th (an overload.Throttle,
// Google SRE's client-side adaptive throttling) before it sends each
// attempt of a request, retries included, and tell it how the attempt
// ended. When th rejects an attempt, nothing is sent and RoundTrip
// returns th's *overload.ThrottledError (errors.Is(err,
// overload.ErrThrottled); http.Client wraps it in a *url.Error), which is
// not retried. Its RetryAfter is what is left of the last wait a refusal
// asked for.
//
// The backend refused an attempt for overload when it answered 429 Too
// Many Requests, 503 Service Unavailable or 504 Gateway Timeout (a proxy
// that waited for it in vain), whatever WithStatusCodes says, or did not
// answer: a network error, or the request's deadline passed. An attempt
// the caller cancelled says nothing and is not counted; any other answer
// is an accept. Use WithMaxAttempts(1) for throttling without retries.
// grpcclient's WithThrottle does the same for gRPC calls.
func WithThrottle(th *overload.Throttle) Option {
	return func(o *options) {
		o.use("WithThrottle")
		if o.errs.Require(th != nil, "WithThrottle(nil); make one with overload.NewThrottle, or leave the option out") {
			o.throttle = th
		}
	}
}

// send sends one attempt of req through next, asking the throttle first
// when there is one, and tells it how the attempt ended.
func (o *options) send(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	if o.throttle == nil {
		return next.RoundTrip(req)
	}
	tk, ok := o.throttle.Allow()
	if !ok {
		closeBody(req)
		return nil, o.throttle.Rejection()
	}
	resp, err := next.RoundTrip(req)
	e, wait := o.ending(resp, err)
	tk.End(e, wait)
	return resp, err
}

// ending is how an attempt ended, for the throttle, and the wait a
// refusal asked for.
func (o *options) ending(resp *http.Response, err error) (core.Ending, time.Duration) {
	var ne net.Error
	switch {
	case err == nil:
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			wait, _ := RetryDelay(resp.Header, time.Unix(0, o.clock.Now()))
			return core.EndDropped, wait
		}
		return core.EndDone, 0
	case errors.Is(err, context.Canceled):
		return core.EndIgnored, 0
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return core.EndDropped, 0
	}
	// An error of the request itself (a bad URL, a body that failed to
	// read) says nothing about the backend.
	return core.EndIgnored, 0
}
