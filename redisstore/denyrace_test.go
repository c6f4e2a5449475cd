package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

type holdKey struct{}

// held marks a context whose command's reply is held: decided is closed
// once the server has answered, and the reply goes back to the caller only
// once release is closed.
type held struct{ decided, release chan struct{} }

// lateReply holds the replies of commands sent under a context carrying a
// *held at holdKey.
type lateReply struct{}

func (lateReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h, ok := ctx.Value(holdKey{}).(*held); ok {
			close(h.decided)
			<-h.release
		}
		return err
	}
}
func (lateReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestDenyCacheRefundRace: a refusal the server decided before a refund,
// whose reply arrives after the refund ended, is not cached: the next
// request asks the server, which has the unit back.
func TestDenyCacheRefundRace(t *testing.T) {
	c := single(t).(*redis.Client)
	c.AddHook(lateReply{})
	clk := coretest.NewClock(coretest.T0)
	lim := redisstore.MustNew(c, core.PerHour(1), redisstore.WithClock(clk), redisstore.WithScriptClock(clk),
		redisstore.WithPrefix("denyrace:"))
	ctx := context.Background()
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("first request: %+v %v", d, err)
	}
	h := &held{decided: make(chan struct{}), release: make(chan struct{})}
	late := make(chan core.Decision)
	go func() {
		d, err := lim.Allow(context.WithValue(ctx, holdKey{}, h), "k", 1)
		if err != nil {
			t.Error(err)
		}
		late <- d
	}()
	<-h.decided
	if err := lim.Refund(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	close(h.release)
	if d := <-late; d.Allowed {
		t.Fatalf("the late request: %+v, want the refusal decided before the refund", d)
	}
	if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after the refund: %+v %v, want the unit given back", d, err)
	}
}
