package httpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// ErrLimited is what a *LimitError wraps: NewLimitedTransport's limiter
// refused a request for longer than WithMaxWait, and the request was not
// sent. Test for it with errors.Is (http.Client wraps it in a *url.Error).
var ErrLimited = errors.New("httpclient: outbound request refused by the rate limit")

// LimitError is the error of a request that a LimitedTransport did not
// send because its limiter asked for a wait longer than WithMaxWait allows.
type LimitError struct {
	// Key is the key the request was limited by.
	Key string
	// Decision is the limiter's last decision: a refusal (its RetryAfter
	// is the wait it asked for), or a shaped admission (Delay) whose units
	// were refunded.
	Decision core.Decision
}

// Error says which key was refused and for how long.
func (e *LimitError) Error() string {
	wait := e.Decision.RetryAfter
	if e.Decision.Allowed {
		wait = e.Decision.Delay
	}
	return fmt.Sprintf("%v: key %q must wait %v", ErrLimited, e.Key, wait)
}

// Unwrap returns ErrLimited.
func (e *LimitError) Unwrap() error { return ErrLimited }

// LimitedTransport is an http.RoundTripper that holds outbound requests to
// a rate limit: a client's own share of an API's quota. Make one with
// NewLimitedTransport. It is safe for concurrent use.
type LimitedTransport struct {
	next http.RoundTripper
	lim  core.Limiter
	key  func(*http.Request) (string, error)
	o    *options
}

// limitedOptions are the options NewLimitedTransport takes.
var limitedOptions = []string{"WithMaxWait", "WithSleep"}

// NewLimitedTransport returns a LimitedTransport that asks lim, for each
// request, to spend one unit of the key that key returns (Host when key is
// nil), and then sends it through next (http.DefaultTransport when nil).
//
// When lim refuses, the transport waits the refusal's RetryAfter and asks
// again; when lim admits with a Delay (a shaping limiter such as
// core.LeakyBucket), it waits the Delay and sends. The waits before one
// request may add up to WithMaxWait's each (default a minute): a refusal or
// a Delay that would take them further fails the request at once with a
// *LimitError (errors.Is(err, ErrLimited)), and a Delay's units are given
// back with lim.Refund. Nothing is sent then. When the request's context
// ends during a wait, RoundTrip returns the context's error, also without
// sending (and refunds a Delay's units).
//
// The transport has no shadow mode: it enforces what lim decides. To
// measure a limit on outbound traffic without holding requests, ask the
// limiter yourself in a RoundTripper of your own and send whatever it
// says.
//
// An admission's concurrency Lease (core.Concurrency) is held while the
// request runs and released when the response body is read to its end or
// closed, or at once when the request fails. A key or limiter error fails
// the request unsent, wrapping the error.
//
// The only option it takes is WithMaxWait, whose each it uses (its total
// bounds retries, which this transport does not make); others are an
// error.
func NewLimitedTransport(next http.RoundTripper, lim core.Limiter, key func(*http.Request) (string, error), opts ...Option) (*LimitedTransport, error) {
	if lim == nil {
		return nil, errors.New("httpclient: nil core.Limiter; make one with core.New")
	}
	o, err := newOptions(opts, "NewLimitedTransport", limitedOptions)
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = http.DefaultTransport
	}
	if key == nil {
		key = Host
	}
	return &LimitedTransport{next: next, lim: lim, key: key, o: o}, nil
}

// Host is NewLimitedTransport's default key: the host (and port, when the
// URL has one) that the request goes to, in lower case, so that each API
// gets its own quota.
func Host(r *http.Request) (string, error) {
	h := r.URL.Host
	if h == "" {
		h = r.Host
	}
	if h == "" {
		return "", errors.New("httpclient: request has no host")
	}
	return strings.ToLower(h), nil
}

// RoundTrip waits for the limiter's admission, as NewLimitedTransport
// describes, then sends req.
func (t *LimitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	lease, err := t.admit(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if lease.IsZero() {
		return resp, err
	}
	ctx := context.WithoutCancel(req.Context())
	if err != nil || resp.Body == nil {
		_ = lease.Release(ctx)
		return resp, err
	}
	b := &leaseBody{ReadCloser: resp.Body, lease: lease, ctx: ctx}
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok {
		// A 101 Switching Protocols response's body is the connection,
		// which net/http's callers write to.
		resp.Body = &leaseRWBody{leaseBody: b, w: rw}
	} else {
		resp.Body = b
	}
	return resp, nil
}

// admit asks the limiter until it admits req, waiting as it asks, and
// returns the admission's lease.
func (t *LimitedTransport) admit(req *http.Request) (core.Lease, error) {
	ctx := req.Context()
	key, err := t.key(req)
	if err != nil {
		return core.Lease{}, fmt.Errorf("httpclient: key of %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	left := t.o.MaxWait
	for {
		d, err := t.lim.Allow(ctx, key, 1)
		if err != nil {
			return core.Lease{}, fmt.Errorf("httpclient: limiter, key %q: %w", key, err)
		}
		wait := d.RetryAfter
		if d.Allowed {
			wait = d.Delay
			if wait <= 0 {
				return d.Lease, nil
			}
		} else if wait <= 0 {
			// A refusal without a wait breaks core.Limiter's contract;
			// asking again at once could spin forever.
			return core.Lease{}, &LimitError{Key: key, Decision: d}
		}
		if wait > left {
			t.giveBack(ctx, key, d)
			return core.Lease{}, &LimitError{Key: key, Decision: d}
		}
		if err := t.o.Sleep(ctx, wait); err != nil {
			t.giveBack(ctx, key, d)
			return core.Lease{}, err
		}
		left -= wait
		if d.Allowed {
			return d.Lease, nil
		}
	}
}

// giveBack returns what a shaped admission took when its request is not
// sent, as the adapters undo an admission: its lease's slot when it holds
// one (releasing and refunding both would give it back twice), its unit
// otherwise. The refund may fail (a store that cannot be reached): the
// unit then stays charged, which only makes the client more careful.
func (t *LimitedTransport) giveBack(ctx context.Context, key string, d core.Decision) {
	if d.Allowed {
		_ = pipeline.Undo(ctx, t.lim, key, 1, d.Lease)
	}
}

// leaseBody releases a concurrency lease when the response body ends.
type leaseBody struct {
	io.ReadCloser
	lease core.Lease
	ctx   context.Context
}

func (b *leaseBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		// io.EOF or a broken body: either way the request is over.
		_ = b.lease.Release(b.ctx)
	}
	return n, err
}

func (b *leaseBody) Close() error {
	err := b.ReadCloser.Close()
	_ = b.lease.Release(b.ctx)
	return err
}

// leaseRWBody is a leaseBody that keeps the body's Write.
type leaseRWBody struct {
	*leaseBody
	w io.Writer
}

func (b *leaseRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }
