package httpmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// TestLeaseEndings: a request's lease is told how the request ended, from
// its context when the handler returns: done while it is live, dropped
// past its deadline (the work took longer than the caller could wait),
// done, measured, when the client went away.
func TestLeaseEndings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		end  func(ctx context.Context) context.Context // what happens to the request's context in the handler
		want core.Ending
	}{
		{"served", func(ctx context.Context) context.Context { return ctx }, core.EndDone},
		{"past its deadline", func(ctx context.Context) context.Context {
			ctx, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
			_ = cancel
			return ctx
		}, core.EndDropped},
		{"client gone", func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return ctx
		}, core.EndDone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := &coretest.Endings{}
			h := httpmw.MustNew(lim, keyfunc.Header("X-Key")).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("X-Key", "k")
			r = r.WithContext(tt.end(r.Context()))
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got := lim.Take(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("endings %v, want [%v]", got, tt.want)
			}
		})
	}
}
