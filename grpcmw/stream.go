package grpcmw

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/pipeline"
)

// meteredStream charges every message the client sends on a stream.
type meteredStream struct {
	grpc.ServerStream
	l   *Limiter
	lim core.Limiter
	key string
	// pushback is the latest refusal's grpc-retry-pushback-ms, set in the
	// trailer once when the stream ends: grpc appends every SetTrailer, and
	// a client refused message after message must not receive a value per
	// refusal. Only the handler's goroutine calls RecvMsg.
	pushback string
	// lease is the latest message's concurrency slot, if its limiter
	// counts messages in flight: a message is in flight from its RecvMsg
	// until the next RecvMsg, or the end of the stream.
	lease core.Lease
}

// RecvMsg receives a message and charges it; a refused message is dropped
// and RecvMsg returns the refusal's status.
func (s *meteredStream) RecvMsg(m any) error {
	ctx := s.Context()
	if !s.lease.IsZero() {
		pipeline.End(ctx, s.lease)
		s.lease = core.Lease{}
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	var res pipeline.Result
	s.l.p.Decide(ctx, s.lim, s.key, 1, &res)
	s.lease = res.Decision.Lease
	switch {
	case res.Shadow:
	case res.Err == nil && !res.Skipped && !res.Decision.Allowed:
		s.pushback = pushbackMillis(res.Decision.RetryAfter)
	case res.Outcome == core.OutcomeStoreError && !res.FailedOpen:
		s.pushback = "1000"
	}
	// No sink: header metadata has gone with the first message, and the
	// trailer is set once by finish.
	return s.l.answer(ctx, sink{}, &res, "", false)
}

// finish releases the last message's lease and sets the stream's trailer
// after its handler returned.
func (s *meteredStream) finish() {
	pipeline.End(s.Context(), s.lease)
	if s.pushback != "" {
		s.ServerStream.SetTrailer(metadata.MD{PushbackKey: {s.pushback}})
	}
}
