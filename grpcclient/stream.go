package grpcclient

import (
	"context"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// retryStream is a client stream that opens again when the server refuses
// it before sending anything.
type retryStream struct {
	o        *options
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	callOpts []grpc.CallOption

	mu        sync.Mutex // guards the fields below
	cur       grpc.ClientStream
	attempt   int           // retries made so far
	spent     time.Duration // their waits, in all
	retriable bool          // nothing received, nothing unreplayable sent
	req       any           // a server-streaming call's request, to send again
	closed    bool          // CloseSend was called, to call again
}

func (s *retryStream) stream() grpc.ClientStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

func (s *retryStream) Header() (metadata.MD, error) { return s.stream().Header() }
func (s *retryStream) Trailer() metadata.MD         { return s.stream().Trailer() }
func (s *retryStream) Context() context.Context     { return s.stream().Context() }

// CloseSend and SendMsg update the replay state under the lock but send
// without it, so that a send blocked on flow control never blocks a reader.
// Once a stream is not retriable its cur never changes again; while it is,
// retry re-checks the state under the lock before it replaces cur.

func (s *retryStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	cur := s.cur
	s.mu.Unlock()
	return cur.CloseSend()
}

func (s *retryStream) SendMsg(m any) error {
	s.mu.Lock()
	if s.retriable {
		pm, ok := m.(proto.Message)
		if !s.desc.ClientStreams && s.req == nil && ok {
			s.req = proto.Clone(pm)
		} else {
			s.retriable, s.req = false, nil
		}
	}
	cur := s.cur
	s.mu.Unlock()
	return cur.SendMsg(m)
}

func (s *retryStream) RecvMsg(m any) error {
	for {
		cur := s.stream()
		err := cur.RecvMsg(m)
		if err == nil {
			s.mu.Lock()
			s.retriable, s.req = false, nil
			s.mu.Unlock()
			return nil
		}
		if err == io.EOF || !s.retry(cur, err) {
			return err
		}
	}
}

// retry waits and opens the stream again after cur ended with err, and
// reports whether it did.
func (s *retryStream) retry(cur grpc.ClientStream, err error) bool {
	s.mu.Lock()
	n, spent := s.attempt+1, s.spent
	ok := s.retriable && s.cur == cur && n < s.o.Attempts
	s.mu.Unlock()
	if !ok {
		return false
	}
	hint, ok := retryHint(err, cur.Trailer())
	if !ok {
		return false
	}
	d, ok := s.o.Wait(s.ctx, n, hint, spent)
	if !ok || s.o.Sleep(s.ctx, d) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.retriable || s.cur != cur {
		return false
	}
	next, nerr := s.streamer(s.ctx, s.desc, s.cc, s.method, s.callOpts...)
	if nerr != nil {
		return false
	}
	// A failed send or close shows as next's status when it is read.
	if s.req != nil {
		_ = next.SendMsg(s.req)
	}
	if s.closed {
		_ = next.CloseSend()
	}
	s.cur, s.attempt, s.spent = next, n, spent+d
	return true
}
