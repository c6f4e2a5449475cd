package graceful

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve serves srv on ln until ctx ends, then shuts it down gracefully: it
// stops accepting, lets requests in flight finish for up to grace, then
// closes what is left and says so with an error.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var err error
	if srv.Shutdown(shut) != nil {
		srv.Close()
		err = fmt.Errorf("requests still running %v after the stop signal were cut off", grace)
	}
	<-served // http.ErrServerClosed, at once
	return err
}
