package graceful_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/floodgate/floodgate/examples/internal/graceful"
)

// A server with nothing in flight stops at once when its context ends.
func ExampleServe() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	stop() // the stop signal has come already
	err = graceful.Serve(ctx, &http.Server{Handler: http.NotFoundHandler()}, ln, time.Second)
	fmt.Println("stopped:", err)
	// Output: stopped: <nil>
}
