package grpcclient_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcclient"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/grpctest"
)

// sleeper records the waits a client interceptor asks for and, when
// advance is set, moves the server's fake clock by them instead of
// sleeping.
type sleeper struct {
	clock   *coretest.Clock
	advance bool
	err     error
	mu      sync.Mutex
	waits   []time.Duration
}

func (s *sleeper) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	if s.advance {
		s.clock.Advance(d)
	}
	return s.err
}

func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func half() float64 { return 0.5 }

// longCtx bounds a test's calls generously: the waits are fake, but a
// deadline shorter than the server's 60s retry delay would stop retries.
func longCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// clientEnv serves Health and Chat limited to 1 per minute on a fake clock,
// with a client using the retrying interceptors.
func clientEnv(t *testing.T, sl *sleeper, opts ...grpcclient.Option) (*grpctest.Env, *recorder) {
	t.Helper()
	rec := &recorder{Limiter: gcra(t, core.PerMinute(1), sl.clock)}
	opts = append([]grpcclient.Option{grpcclient.WithSleep(sl.sleep), grpcclient.WithRand(half)}, opts...)
	unary, err := grpcclient.UnaryClientInterceptor(opts...)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := grpcclient.StreamClientInterceptor(opts...)
	if err != nil {
		t.Fatal(err)
	}
	e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.Constant("k"), grpcmw.WithSkip(nil)),
		grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream))
	return e, rec
}

func TestUnaryClientRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		advance   bool
		opts      []grpcclient.Option
		deadline  time.Duration
		wantCode  codes.Code
		wantWaits []time.Duration
		wantTries int
	}{
		{
			name: "retries then succeeds", advance: true,
			wantCode: codes.OK, wantWaits: []time.Duration{time.Minute + 50*time.Millisecond}, wantTries: 2,
		},
		{
			name: "max attempts", advance: false,
			wantCode:  codes.ResourceExhausted,
			wantWaits: []time.Duration{time.Minute + 50*time.Millisecond, time.Minute + 100*time.Millisecond},
			wantTries: 3,
		},
		{
			name: "backoff capped", advance: false,
			opts: []grpcclient.Option{grpcclient.WithMaxAttempts(4), grpcclient.WithBackoff(100*time.Millisecond, 150*time.Millisecond),
				grpcclient.WithMaxWait(time.Minute, 4*time.Minute)},
			wantCode:  codes.ResourceExhausted,
			wantWaits: []time.Duration{time.Minute + 50*time.Millisecond, time.Minute + 75*time.Millisecond, time.Minute + 75*time.Millisecond},
			wantTries: 4,
		},
		{
			name: "one attempt", advance: true,
			opts:     []grpcclient.Option{grpcclient.WithMaxAttempts(1)},
			wantCode: codes.ResourceExhausted, wantTries: 1,
		},
		{
			name: "delay reaches the deadline", advance: true, deadline: 30 * time.Second,
			wantCode: codes.ResourceExhausted, wantTries: 1,
		},
		{
			name: "delay longer than max wait", advance: true,
			opts:     []grpcclient.Option{grpcclient.WithMaxWait(59*time.Second, 3*time.Minute)},
			wantCode: codes.ResourceExhausted, wantTries: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sl := &sleeper{clock: coretest.NewClock(t0), advance: tc.advance}
			e, rec := clientEnv(t, sl, tc.opts...)
			ctx := longCtx(t)
			if _, _, err := e.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			_, _, err := e.Check(ctx)
			if status.Code(err) != tc.wantCode {
				t.Fatalf("err %v, want %v", err, tc.wantCode)
			}
			if err != nil {
				// The last refusal comes back whole.
				if d, ok := grpcclient.RetryDelay(err); !ok || d != time.Minute || len(status.Convert(err).Details()) != 3 {
					t.Errorf("returned status %+v", d)
				}
			}
			if got := sl.got(); !reflect.DeepEqual(got, tc.wantWaits) {
				t.Errorf("waits %v, want %v", got, tc.wantWaits)
			}
			if keys := rec.snapshot(); len(keys)-1 != tc.wantTries {
				t.Errorf("%d attempts reached the server, want %d", len(keys)-1, tc.wantTries)
			}
		})
	}
}

// TestClientJitterBoundedByDeadline: with a deadline 90s away and a 60s
// delay, the jitter is drawn from what is left, so the wait ends before
// the deadline however large the backoff.
func TestClientJitterBoundedByDeadline(t *testing.T) {
	t.Parallel()
	sl := &sleeper{clock: coretest.NewClock(t0), advance: true}
	e, _ := clientEnv(t, sl, grpcclient.WithBackoff(time.Hour, time.Hour), grpcclient.WithRand(func() float64 { return 0.999999 }))
	ctx := callCtx(t)
	if _, _, err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, _, err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	waits := sl.got()
	if len(waits) != 1 || waits[0] < 89*time.Second || waits[0] >= 90*time.Second {
		t.Errorf("waits %v, want one in [89s, 90s)", waits)
	}
}

// invoker is a fake next step of a client chain: it returns errs in turn,
// with the trailers given, and counts calls.
type invoker struct {
	errs     []error
	trailers []metadata.MD
	n        int
}

func (f *invoker) invoke(_ context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
	i := f.n
	f.n++
	for _, o := range opts {
		if tr, ok := o.(grpc.TrailerCallOption); ok && i < len(f.trailers) {
			*tr.TrailerAddr = f.trailers[i]
		}
	}
	if i < len(f.errs) {
		return f.errs[i]
	}
	return nil
}

func withRetryInfo(c codes.Code, d *durationpb.Duration) error {
	st, err := status.New(c, "x").WithDetails(&errdetails.RetryInfo{RetryDelay: d})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestUnaryClientWhatIsRetried(t *testing.T) {
	t.Parallel()
	exhausted := status.Error(codes.ResourceExhausted, "grpc: received message larger than max")
	pushback := func(v string) metadata.MD { return metadata.Pairs(pushbackKey, v) }
	tests := []struct {
		name      string
		errs      []error
		trailers  []metadata.MD
		wantCalls int
		wantWaits []time.Duration
	}{
		{"success", nil, nil, 1, nil},
		{"no retry delay", []error{exhausted}, nil, 1, nil},
		{"pushback only", []error{exhausted}, []metadata.MD{pushback("1500")}, 2, []time.Duration{1500*time.Millisecond + 50*time.Millisecond}},
		{"negative pushback: do not retry", []error{exhausted}, []metadata.MD{pushback("-1")}, 1, nil},
		{"malformed pushback", []error{exhausted}, []metadata.MD{pushback("1.5")}, 1, nil},
		{"retry info wins over pushback", []error{withRetryInfo(codes.ResourceExhausted, durationpb.New(2*time.Second))}, []metadata.MD{pushback("9000")}, 2, []time.Duration{2*time.Second + 50*time.Millisecond}},
		{"zero delay: jitter only", []error{withRetryInfo(codes.ResourceExhausted, durationpb.New(0))}, nil, 2, []time.Duration{50 * time.Millisecond}},
		{"negative retry info", []error{withRetryInfo(codes.ResourceExhausted, durationpb.New(-time.Second))}, nil, 1, nil},
		{"other code with retry info", []error{withRetryInfo(codes.Unavailable, durationpb.New(time.Second))}, nil, 1, nil},
		{"plain error", []error{errors.New("boom")}, nil, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sl := &sleeper{}
			ic, err := grpcclient.UnaryClientInterceptor(grpcclient.WithSleep(sl.sleep), grpcclient.WithRand(half))
			if err != nil {
				t.Fatal(err)
			}
			inv := &invoker{errs: tc.errs, trailers: tc.trailers}
			err = ic(context.Background(), mCheck, nil, nil, nil, inv.invoke)
			if inv.n != tc.wantCalls {
				t.Errorf("%d calls, want %d", inv.n, tc.wantCalls)
			}
			if tc.wantCalls == 1 && len(tc.errs) > 0 && err != tc.errs[0] {
				t.Errorf("err %v, want the first error unchanged", err)
			}
			if got := sl.got(); !reflect.DeepEqual(got, tc.wantWaits) {
				t.Errorf("waits %v, want %v", got, tc.wantWaits)
			}
		})
	}
}

// TestClientHugeWaitSaturates: with a very large WithMaxWait a server may
// ask for a delay close to the largest Duration. Its sum with the jitter
// must saturate there: a sum that wrapped negative would retry at once.
func TestClientHugeWaitSaturates(t *testing.T) {
	t.Parallel()
	const maxDur = time.Duration(math.MaxInt64)
	exhausted := status.Error(codes.ResourceExhausted, "x")
	retryIn := func(d *durationpb.Duration) error { return withRetryInfo(codes.ResourceExhausted, d) }
	almostOne := func() float64 { return math.Nextafter(1, 0) }
	tests := []struct {
		name    string
		err     error
		trailer metadata.MD
		opts    []grpcclient.Option
		want    time.Duration
	}{
		{"small delay adds the jitter", retryIn(durationpb.New(time.Second)), nil, nil, time.Second + 50*time.Millisecond},
		// The jitter is cut to what WithMaxWait's total leaves: half of 1 ms.
		{"delay just under the largest", retryIn(durationpb.New(maxDur - time.Millisecond)), nil, nil, maxDur - time.Millisecond/2},
		{"delay past the largest", retryIn(&durationpb.Duration{Seconds: 315_576_000_000}), nil, nil, maxDur},
		// Half of the 775807 ns the total leaves after the largest
		// whole number of milliseconds.
		{"largest pushback", exhausted, metadata.Pairs(pushbackKey, strconv.FormatInt(int64(maxDur/time.Millisecond), 10)), nil, maxDur - 387904},
		// The jitter is cut to the total's rest: as with no delay.
		{"largest backoff", retryIn(durationpb.New(time.Hour)), nil,
			[]grpcclient.Option{grpcclient.WithBackoff(maxDur, maxDur), grpcclient.WithRand(almostOne)}, maxDur - 1023},
		{"largest backoff, zero delay", retryIn(durationpb.New(0)), nil,
			[]grpcclient.Option{grpcclient.WithBackoff(maxDur, maxDur), grpcclient.WithRand(almostOne)}, maxDur - 1023},
		{"rand out of range", retryIn(durationpb.New(time.Second)), nil,
			[]grpcclient.Option{grpcclient.WithRand(func() float64 { return 2 })}, time.Second + 100*time.Millisecond},
		{"negative rand", retryIn(durationpb.New(time.Second)), nil,
			[]grpcclient.Option{grpcclient.WithRand(func() float64 { return -1 })}, time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sl := &sleeper{}
			opts := append([]grpcclient.Option{grpcclient.WithSleep(sl.sleep), grpcclient.WithRand(half),
				grpcclient.WithMaxWait(maxDur, maxDur), grpcclient.WithMaxAttempts(2)}, tc.opts...)
			ic, err := grpcclient.UnaryClientInterceptor(opts...)
			if err != nil {
				t.Fatal(err)
			}
			inv := &invoker{errs: []error{tc.err}, trailers: []metadata.MD{tc.trailer}}
			if err := ic(context.Background(), mCheck, nil, nil, nil, inv.invoke); err != nil || inv.n != 2 {
				t.Fatalf("err %v after %d calls; want success on the retry", err, inv.n)
			}
			if got := sl.got(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("waits %v, want [%v]", got, tc.want)
			}
		})
	}
}

func TestUnaryClientSleepInterrupted(t *testing.T) {
	t.Parallel()
	sl := &sleeper{err: context.Canceled}
	ic, err := grpcclient.UnaryClientInterceptor(grpcclient.WithSleep(sl.sleep))
	if err != nil {
		t.Fatal(err)
	}
	denied := withRetryInfo(codes.ResourceExhausted, durationpb.New(time.Second))
	inv := &invoker{errs: []error{denied, denied}}
	if err := ic(context.Background(), mCheck, nil, nil, nil, inv.invoke); err != denied || inv.n != 1 {
		t.Errorf("err %v after %d calls; want the refusal after 1", err, inv.n)
	}
}

func TestDefaultSleepStopsWithContext(t *testing.T) {
	t.Parallel()
	ic, err := grpcclient.UnaryClientInterceptor()
	if err != nil {
		t.Fatal(err)
	}
	denied := withRetryInfo(codes.ResourceExhausted, durationpb.New(50*time.Second))
	inv := &invoker{errs: []error{denied, denied}}
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if err := ic(ctx, mCheck, nil, nil, nil, inv.invoke); err != denied || inv.n != 1 {
		t.Errorf("err %v after %d calls; want the refusal after 1", err, inv.n)
	}
}

func TestStreamClientRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		advance   bool
		wantCode  codes.Code
		wantWaits int
		wantTries int
	}{
		{"retries then succeeds", true, codes.OK, 1, 2},
		{"max attempts", false, codes.ResourceExhausted, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sl := &sleeper{clock: coretest.NewClock(t0), advance: tc.advance}
			e, rec := clientEnv(t, sl)
			ctx := longCtx(t)
			if _, _, err := e.Check(ctx); err != nil {
				t.Fatal(err)
			}
			req := &healthpb.HealthCheckRequest{Service: ""}
			st, err := e.Health.Watch(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Service = "changed after the call" // the request sent again is a copy
			resp, err := st.Recv()
			if status.Code(err) != tc.wantCode {
				t.Fatalf("Recv: %v, want %v", err, tc.wantCode)
			}
			if err == nil {
				if resp.Status != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("status %v", resp.Status)
				}
				// Header describes the attempt that succeeded.
				h, _ := st.Header()
				if got := h.Get("retry-after"); got != nil {
					t.Errorf("header of the successful attempt has retry-after %q", got)
				}
			}
			if got := sl.got(); len(got) != tc.wantWaits {
				t.Errorf("waits %v, want %d", got, tc.wantWaits)
			}
			if keys := rec.snapshot(); len(keys)-1 != tc.wantTries {
				t.Errorf("%d attempts reached the server, want %d", len(keys)-1, tc.wantTries)
			}
		})
	}
}

// TestStreamClientDoesNotReplay: a bidirectional stream refused after the
// client has sent on it is not opened again.
func TestStreamClientDoesNotReplay(t *testing.T) {
	t.Parallel()
	sl := &sleeper{clock: coretest.NewClock(t0), advance: true}
	e, rec := clientEnv(t, sl)
	ctx := callCtx(t)
	if _, _, err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := e.Chat(ctx, 1)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("chat: %v", err)
	}
	if got := sl.got(); len(got) != 0 {
		t.Errorf("waited %v", got)
	}
	if keys := rec.snapshot(); len(keys) != 2 {
		t.Errorf("%d checks, want 2 (no retry)", len(keys))
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"nil", nil, 0, false},
		{"plain", errors.New("x"), 0, false},
		{"no details", status.Error(codes.ResourceExhausted, "x"), 0, false},
		{"retry info", withRetryInfo(codes.ResourceExhausted, durationpb.New(1500*time.Millisecond)), 1500 * time.Millisecond, true},
		{"nanosecond", withRetryInfo(codes.ResourceExhausted, durationpb.New(1)), 1, true},
		{"other code", withRetryInfo(codes.Aborted, durationpb.New(time.Second)), 0, false},
		{"invalid duration", withRetryInfo(codes.ResourceExhausted, &durationpb.Duration{Seconds: 1, Nanos: -5}), 0, false},
		{"nil delay", withRetryInfo(codes.ResourceExhausted, nil), 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := grpcclient.RetryDelay(tc.err)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("RetryDelay = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestClientOptionsValidate(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]grpcclient.Option{
		"nil":            nil,
		"zero attempts":  grpcclient.WithMaxAttempts(0),
		"negative base":  grpcclient.WithBackoff(-1, time.Second),
		"max below base": grpcclient.WithBackoff(time.Second, time.Millisecond),
		"zero max wait":  grpcclient.WithMaxWait(0, time.Minute),
		"zero total":     grpcclient.WithMaxWait(time.Minute, 0),
		"nil rand":       grpcclient.WithRand(nil),
		"nil sleep":      grpcclient.WithSleep(nil),
	} {
		if _, err := grpcclient.UnaryClientInterceptor(opt); err == nil || !strings.HasPrefix(err.Error(), "grpcclient: ") {
			t.Errorf("%s: UnaryClientInterceptor error %v", name, err)
		}
		if _, err := grpcclient.StreamClientInterceptor(opt); err == nil {
			t.Errorf("%s: StreamClientInterceptor accepted it", name)
		}
	}
}
