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

// Server is an http.Server started by [Start].
type Server struct {
	// URL is where it serves: http://host:port.
	URL  string
	stop context.CancelFunc
	done chan struct{}
	err  error
}

// Start serves srv on addr, as Serve does, until ctx ends or Stop is
// called, and returns at once.
func Start(ctx context.Context, srv *http.Server, addr string, grace time.Duration) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	s := &Server{URL: "http://" + ln.Addr().String(), stop: stop, done: make(chan struct{})}
	go func() {
		s.err = Serve(ctx, srv, ln, grace)
		close(s.done)
	}()
	return s, nil
}

// Wait returns when serving has ended, because the context given to Start
// ended, Stop was called or the server failed, with Serve's error.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

// Stop shuts s down gracefully, as the end of Start's context does, and
// returns Serve's error.
func (s *Server) Stop() error {
	s.stop()
	return s.Wait()
}
