package httpclient_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/keyfunc"
)

// logged prints each response the retry transport sees.
type logged struct {
	next http.RoundTripper
	out  *strings.Builder
}

func (l logged) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil {
		fmt.Fprintf(l.out, "attempt: %d (Retry-After %q)\n", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	return resp, err
}

// TestRetryTransportStory: a server limited by floodgate to 1 request per minute refuses the
// second request once; the client waits what Retry-After says and its
// retry is admitted.
func TestRetryTransportStory(t *testing.T) {
	var out strings.Builder
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0)) // a fake clock, for exact output
	lim, _ := core.New(core.PerMinute(1), core.WithClock(clock))
	mw, _ := httpmw.New(lim, keyfunc.Constant("api"))
	srv := httptest.NewServer(mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
	})))
	defer srv.Close()

	rt, _ := httpclient.NewRetryTransport(logged{http.DefaultTransport, &out},
		httpclient.WithRand(func() float64 { return 0 }), // no jitter, for exact output
		httpclient.WithSleep(func(_ context.Context, d time.Duration) error {
			fmt.Fprintln(&out, "wait:", d)
			clock.Advance(d) // instead of sleeping
			return nil
		}))
	client := &http.Client{Transport: rt}
	for range 2 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintln(&out, "got:", resp.StatusCode, string(body))
	}
	if got, want := out.String(), "attempt: 200 (Retry-After \"\")\ngot: 200 hello\nattempt: 429 (Retry-After \"60\")\nwait: 1m0s\nattempt: 200 (Retry-After \"\")\ngot: 200 hello\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestLimitedTransportStory: a client's own limit of 2 requests per second to each host: after the
// burst of two, each request waits its turn before it is sent.
func TestLimitedTransportStory(t *testing.T) {
	var out strings.Builder
	clock := coretest.NewClock(time.Unix(1_699_999_200, 0))
	lim, _ := core.New(core.PerSecond(2), core.WithClock(clock))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	rt, _ := httpclient.NewLimitedTransport(http.DefaultTransport, lim, nil,
		httpclient.WithMaxWait(time.Second, 3*time.Minute), // a longer wait fails with ErrLimited
		httpclient.WithSleep(func(_ context.Context, d time.Duration) error {
			fmt.Fprintln(&out, "wait:", d)
			clock.Advance(d)
			return nil
		}))
	client := &http.Client{Transport: rt}
	for i := 1; i <= 4; i++ {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		fmt.Fprintf(&out, "request %d: %d\n", i, resp.StatusCode)
	}
	if got, want := out.String(), "request 1: 200\nrequest 2: 200\nwait: 500ms\nrequest 3: 200\nwait: 500ms\nrequest 4: 200\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
