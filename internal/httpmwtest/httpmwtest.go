package httpmwtest

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
)

// Writer is a reusable http.ResponseWriter that keeps the status and the
// headers and discards the body, so that a benchmark measures the handler
// rather than httptest.ResponseRecorder's allocations. It is not safe for
// concurrent use: give each goroutine its own.
type Writer struct {
	// Code is the status written, or 0.
	Code int
	h    http.Header
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{h: http.Header{}} }

// Header returns the response headers.
func (w *Writer) Header() http.Header { return w.h }

// Write discards b.
func (w *Writer) Write(b []byte) (int, error) { return len(b), nil }

// WriteHeader records code.
func (w *Writer) WriteHeader(code int) { w.Code = code }

// Reset makes w ready for the next request. It keeps the header map's
// storage, which a server's fresh map would not have: the handler's own
// allocations stay visible.
func (w *Writer) Reset() { clear(w.h); w.Code = 0 }

// Peers returns n requests for method and target from n distinct socket
// peers (10.a.b.c:4242), and fails tb unless key gives each a different
// key: a benchmark that meant n clients but used one would measure the
// wrong thing.
func Peers(tb testing.TB, n int, method, target string, key func(*http.Request) (string, error)) []*http.Request {
	tb.Helper()
	if n < 1 || n > 1<<24 {
		tb.Fatalf("httpmwtest: Peers(%d): n must be in 1..2^24", n)
	}
	reqs := make([]*http.Request, n)
	seen := make(map[string]bool, n)
	for i := range reqs {
		r := httptest.NewRequest(method, target, nil)
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":4242"
		k, err := key(r)
		if err != nil {
			tb.Fatalf("httpmwtest: key for peer %s: %v", r.RemoteAddr, err)
		}
		seen[k] = true
		reqs[i] = r
	}
	if len(seen) != n {
		tb.Fatalf("httpmwtest: %d distinct keys for %d peers", len(seen), n)
	}
	return reqs
}

// SameResponse fails tb unless got and want have the same status, the
// same headers (every value, in order) and the same body.
func SameResponse(tb testing.TB, got, want *httptest.ResponseRecorder) {
	tb.Helper()
	if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || got.Body.String() != want.Body.String() {
		tb.Fatalf("responses differ:\ngot:  %d %v %q\nwant: %d %v %q",
			got.Code, got.Header(), got.Body.String(), want.Code, want.Header(), want.Body.String())
	}
}

// Benchmark measures h serving reqs in turn: from one goroutine (the
// sub-benchmark "mode=seq") and from RunParallel's goroutines
// ("mode=par"), each starting at a different request with a [Writer] of its
// own. It reports allocations, and fails b if a response's status is not
// want.
func Benchmark(b *testing.B, h http.Handler, reqs []*http.Request, want int) {
	b.Run("mode=seq", func(b *testing.B) {
		w := NewWriter()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			w.Reset()
			h.ServeHTTP(w, reqs[i%len(reqs)])
			if w.Code != want {
				b.Fatalf("status %d, want %d", w.Code, want)
			}
		}
	})
	b.Run("mode=par", func(b *testing.B) {
		var start atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			w := NewWriter()
			got := want
			for i := int(start.Add(int64(len(reqs)/7 + 1))); pb.Next(); i++ {
				w.Reset()
				h.ServeHTTP(w, reqs[i%len(reqs)])
				if w.Code != want {
					got = w.Code
				}
			}
			if got != want {
				b.Errorf("status %d, want %d", got, want)
			}
		})
	})
}
