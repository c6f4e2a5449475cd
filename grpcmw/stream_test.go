package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
)

// fakeStream is a server stream whose client sends n messages, recording
// what the server sets as header and trailer.
type fakeStream struct {
	grpc.ServerStream
	ctx     context.Context
	n       int
	header  metadata.MD
	trailer metadata.MD
	sets    int // SetTrailer calls
}

func (s *fakeStream) Context() context.Context { return s.ctx }
func (s *fakeStream) SetHeader(md metadata.MD) error {
	s.header = metadata.Join(s.header, md)
	return nil
}
func (s *fakeStream) SetTrailer(md metadata.MD) {
	s.sets++
	s.trailer = metadata.Join(s.trailer, md)
}
func (s *fakeStream) RecvMsg(any) error {
	if s.n == 0 {
		return io.EOF
	}
	s.n--
	return nil
}

// TestMeteredPushbackOnce: a client refused message after message gets one
// grpc-retry-pushback-ms in the trailer, the latest refusal's, however many
// refusals there were (it used to get one value per refusal, 40,000
// refusals making a trailer of 39,999 values).
func TestMeteredPushbackOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lim  core.Limiter
		want string
	}{
		{"denied", gcra(t, core.PerMinute(4), coretest.NewClock(t0)), "15000"},
		{"store down", coretest.StoreDown(errors.New("down")), "1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := grpcmw.MustNew(tc.lim, grpcmw.Constant("k"), grpcmw.WithMeterMessages())
			ss := &fakeStream{ctx: context.Background(), n: 20000}
			refused := 0
			ic := l.StreamServerInterceptor()
			info := &grpc.StreamServerInfo{FullMethod: "/test.Chat/Talk", IsClientStream: true}
			err := ic(nil, ss, info, func(_ any, ss grpc.ServerStream) error {
				for {
					err := ss.RecvMsg(nil)
					switch {
					case err == io.EOF:
						return nil
					case status.Code(err) == codes.ResourceExhausted:
						refused++
					case err != nil:
						return err
					}
				}
			})
			if tc.name == "store down" {
				// The stream itself is refused when it opens.
				if status.Code(err) != codes.ResourceExhausted || refused != 0 {
					t.Fatalf("open: %v, %d refused", err, refused)
				}
				return
			}
			if err != nil || refused != 20000-3 {
				t.Fatalf("err %v, %d refused; want nil, %d", err, refused, 20000-3)
			}
			if got := ss.trailer.Get(grpcmw.PushbackKey); len(got) != 1 || got[0] != tc.want || ss.sets != 1 {
				t.Errorf("trailer %s = %q after %d SetTrailer calls; want [%s] once", grpcmw.PushbackKey, got, ss.sets, tc.want)
			}
		})
	}
}

// TestInfrastructureExempt: health and reflection are not limited by
// default, and are under WithSkip(nil), which skips nothing, as a WithSkip
// function that skips nothing does.
func TestInfrastructureExempt(t *testing.T) {
	t.Parallel()
	methods := []string{
		"/grpc.health.v1.Health/Check",
		"/grpc.health.v1.Health/Watch",
		"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
	}
	limited := []string{"/grpc.healthy.v1.Health/Check", "/shop.Orders/Create", "/grpc.health.v1.Healthz/Check"}
	for _, skip := range []string{"default", "nil", "none"} {
		infra := skip != "default"
		opts := []grpcmw.Option{}
		switch skip {
		case "nil":
			opts = append(opts, grpcmw.WithSkip(nil))
		case "none":
			opts = append(opts, grpcmw.WithSkip(func(context.Context, string) bool { return false }))
		}
		for _, m := range append(methods, limited...) {
			lim := gcra(t, core.PerMinute(1), coretest.NewClock(t0))
			l := grpcmw.MustNew(lim, grpcmw.Constant("k"), opts...)
			ic := l.UnaryServerInterceptor()
			var errs []error
			for range 3 {
				ctx := grpc.NewContextWithServerTransportStream(context.Background(), &fakeTransport{method: m})
				_, err := ic(ctx, nil, &grpc.UnaryServerInfo{FullMethod: m}, func(context.Context, any) (any, error) { return nil, nil })
				errs = append(errs, err)
			}
			exempt := !infra && slices.Contains(methods, m)
			if refusedLast := status.Code(errs[2]) == codes.ResourceExhausted; refusedLast == exempt {
				t.Errorf("skip %s, %s: errors %v; exempt=%v", skip, m, errs, exempt)
			}
		}
	}
}

// TestObserverHearsMessages: every metered message is an observed decision,
// with transport "grpc" and the stream's key.
func TestObserverHearsMessages(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	obs := core.ObserverFunc(func(_ context.Context, e core.Event) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e.Transport+":"+e.Key+":"+e.Outcome.String())
	})
	l := grpcmw.MustNew(gcra(t, core.PerMinute(3), coretest.NewClock(t0)), grpcmw.Constant("k"),
		grpcmw.WithMeterMessages(), grpcmw.WithObserver(obs))
	ss := &fakeStream{ctx: context.Background(), n: 3}
	err := l.StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{FullMethod: "/test.Chat/Talk"}, func(_ any, ss grpc.ServerStream) error {
		for {
			if err := ss.RecvMsg(nil); err == io.EOF {
				return nil
			}
		}
	})
	want := []string{"grpc:k:allowed", "grpc:k:allowed", "grpc:k:allowed", "grpc:k:denied"}
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}
