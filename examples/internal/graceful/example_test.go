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

// Start returns at once, with the URL to send requests to; Stop shuts the
// server down gracefully.
func ExampleStart() {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })}
	s, err := graceful.Start(context.Background(), srv, "127.0.0.1:0", time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get(s.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	fmt.Println("stopped:", s.Stop())
	// Output:
	// 200 OK
	// stopped: <nil>
}
