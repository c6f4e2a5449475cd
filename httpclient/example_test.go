package httpclient_test

import (
	"net/http"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/httpclient"
)

// A client that waits out refusals: a response of 429 or 503 with
// Retry-After is retried after the delay it asks for plus jitter, at most
// three times in all (TestRetryTransportStory runs this against a
// floodgate server on a fake clock).
func ExampleNewRetryTransport() {
	rt, err := httpclient.NewRetryTransport(http.DefaultTransport, httpclient.WithMaxAttempts(3))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: rt}
	_ = client // client.Get(...) now waits out rate-limit refusals
}

// A client's own limit of 2 requests per second to each host: after the
// burst of two, each request waits its turn before it is sent, and a wait
// longer than a second fails with ErrLimited (TestLimitedTransportStory
// runs this on a fake clock).
func ExampleNewLimitedTransport() {
	lim := core.MustNew(core.PerSecond(2))
	rt, err := httpclient.NewLimitedTransport(http.DefaultTransport, lim, nil, httpclient.WithMaxWait(time.Second, 3*time.Minute))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: rt}
	_ = client
}
