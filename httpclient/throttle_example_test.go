package httpclient_test

import (
	"net/http"

	"github.com/floodgate/floodgate/httpclient"
	"github.com/floodgate/floodgate/overload"
)

// A client that stops hammering a backend that sheds load: once the
// backend refuses too many requests (429, 503, 504), the client rejects
// some locally with an error matching overload.ErrThrottled, retries
// included (TestThrottleTransport runs this against a shedding server).
func ExampleWithThrottle() {
	th, err := overload.NewThrottle(overload.ThrottleConfig{})
	if err != nil {
		panic(err)
	}
	rt, err := httpclient.NewRetryTransport(http.DefaultTransport, httpclient.WithThrottle(th))
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: rt}
	_ = client
}
