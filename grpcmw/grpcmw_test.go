package grpcmw_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/grpcmw"
	"github.com/floodgate/floodgate/httpmw"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/grpctest"
	"github.com/floodgate/floodgate/keyfunc"
)

const (
	mCheck = "/grpc.health.v1.Health/Check"
	mList  = "/grpc.health.v1.Health/List"
	mWatch = "/grpc.health.v1.Health/Watch"
)

var t0 = time.Unix(1_700_000_000, 0)

// hookErrors hears of every call's error through the observer, which
// sees every error (Event.Err).
func hookErrors(f func(err error)) grpcmw.Option {
	return grpcmw.WithObserver(core.ObserverFunc(func(_ context.Context, e core.Event) {
		if e.Err != nil {
			f(e.Err)
		}
	}))
}

// limitAll replaces the default skip function (SkipInfrastructure): the
// tests call the health service.
var limitAll = grpcmw.WithSkip(nil)

// gcra makes an in-memory limiter on clock. GCRA's integer arithmetic
// makes every expected value exact: 3 per minute is one unit per 20s.
func gcra(t *testing.T, l core.Limit, clock core.Clock) *core.Keyed {
	t.Helper()
	lim, err := core.New(l.WithAlgorithm(core.GCRA), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// serveLimiter starts the test server (grpctest.Serve) behind l's
// interceptors.
func serveLimiter(t *testing.T, l *grpcmw.Limiter, dialOpts ...grpc.DialOption) *grpctest.Env {
	t.Helper()
	return grpctest.Serve(t, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(l.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(l.StreamServerInterceptor()),
	}, dialOpts...)
}

func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// callList calls Health.List and returns its header metadata.
func callList(ctx context.Context, e *grpctest.Env) (header metadata.MD, err error) {
	_, err = e.Health.List(ctx, &healthpb.HealthListRequest{}, grpc.Header(&header))
	return header, err
}

// rlFields keeps the rate-limit fields of md, so that grpc's own fields
// (content-type) do not get in the way of comparisons.
func rlFields(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for _, k := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit", "retry-after"} {
		if v, ok := md[k]; ok {
			out[k] = v
		}
	}
	return out
}

func wantMD(t *testing.T, what string, got, want metadata.MD) {
	t.Helper()
	if g := rlFields(got); !reflect.DeepEqual(g, want) {
		t.Errorf("%s: rate-limit metadata\n got %v\nwant %v", what, g, want)
	}
}

func allowedMD(policy, limit, remaining, reset, ratelimit string) metadata.MD {
	return metadata.MD{
		"x-ratelimit-limit":     {limit},
		"x-ratelimit-remaining": {remaining},
		"x-ratelimit-reset":     {reset},
		"ratelimit-policy":      {policy},
		"ratelimit":             {ratelimit},
	}
}

// denial is what a refusal's status says.
type denial struct {
	code    codes.Code
	msg     string
	retry   time.Duration
	subject string
	desc    string
	reason  string
	domain  string
	meta    map[string]string
	details int
}

func parseDenial(t *testing.T, err error) denial {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a status", err)
	}
	d := denial{code: st.Code(), msg: st.Message(), retry: -1, details: len(st.Details())}
	for _, det := range st.Details() {
		switch v := det.(type) {
		case *errdetails.RetryInfo:
			d.retry = v.GetRetryDelay().AsDuration()
		case *errdetails.QuotaFailure:
			if len(v.Violations) != 1 {
				t.Fatalf("QuotaFailure has %d violations, want 1", len(v.Violations))
			}
			d.subject, d.desc = v.Violations[0].Subject, v.Violations[0].Description
		case *errdetails.ErrorInfo:
			d.reason, d.domain, d.meta = v.Reason, v.Domain, v.Metadata
		default:
			t.Fatalf("unexpected detail %T", det)
		}
	}
	return d
}

func TestUnaryBurstDenyRefill(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	lim := gcra(t, core.PerMinute(3), clock)
	// Every call's metadata, not only the default's refusals and calls
	// near the limit.
	e := serveLimiter(t, grpcmw.MustNew(lim, grpcmw.Constant("all"), limitAll, grpcmw.WithHeaders(core.HeadersBoth)))
	ctx := callCtx(t)
	const policy = `"default";q=3;w=60`

	for i, want := range []metadata.MD{
		allowedMD(policy, "3", "2", "20", `"default";r=2;t=20`),
		allowedMD(policy, "3", "1", "40", `"default";r=1;t=40`),
		allowedMD(policy, "3", "0", "60", `"default";r=0;t=60`),
	} {
		h, tr, err := e.Check(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		wantMD(t, "allowed call", h, want)
		if v := tr.Get(grpcmw.PushbackKey); v != nil {
			t.Errorf("allowed call has pushback %q", v)
		}
	}

	h, tr, err := e.Check(ctx)
	got := parseDenial(t, err)
	want := denial{
		code: codes.ResourceExhausted, msg: grpcmw.MessageDenied, retry: 20 * time.Second,
		subject: "default", desc: "3 per 1m0s",
		reason: grpcmw.ReasonRateLimited, domain: grpcmw.Domain,
		meta:    map[string]string{"policy": "default", "limit": "3", "remaining": "0"},
		details: 3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("denial\n got %+v\nwant %+v", got, want)
	}
	denied := allowedMD(policy, "3", "0", "60", `"default";r=0;t=20`)
	denied["retry-after"] = []string{"20"}
	wantMD(t, "denied call", h, denied)
	if v := tr.Get(grpcmw.PushbackKey); !reflect.DeepEqual(v, []string{"20000"}) {
		t.Errorf("trailer %s = %q, want [20000]", grpcmw.PushbackKey, v)
	}

	// Waiting exactly RetryInfo's delay admits the same call.
	clock.Advance(got.retry)
	h, _, err = e.Check(ctx)
	if err != nil {
		t.Fatalf("after waiting RetryInfo: %v", err)
	}
	wantMD(t, "after refill", h, allowedMD(policy, "3", "0", "60", `"default";r=0;t=60`))
}

// recorder wraps a core.Limiter and keeps what it was asked and answered.
type recorder struct {
	core.Limiter
	mu      sync.Mutex
	keys    []string
	costs   []int
	last    core.Decision
	refunds []string
}

func (r *recorder) Allow(ctx context.Context, key string, cost int) (core.Decision, error) {
	d, err := r.Limiter.Allow(ctx, key, cost)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	r.costs = append(r.costs, cost)
	r.last = d
	return d, err
}

func (r *recorder) Refund(ctx context.Context, key string, cost int) error {
	r.mu.Lock()
	r.refunds = append(r.refunds, key)
	r.mu.Unlock()
	return r.Limiter.Refund(ctx, key, cost)
}

func (r *recorder) snapshot() (keys []string, costs []int, last core.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...), append([]int(nil), r.costs...), r.last
}

// decided answers every Allow with d.
type decided struct{ d core.Decision }

func (f decided) Allow(context.Context, string, int) (core.Decision, error) { return f.d, nil }
func (f decided) Refund(context.Context, string, int) error                 { return nil }

// TestMetadataMatchesHTTP checks that each call's metadata holds exactly
// what httpmw writes in HTTP headers for the same Decision, in every
// style, for named and unnamed, token-bucket and GCRA policies.
func TestMetadataMatchesHTTP(t *testing.T) {
	t.Parallel()
	limits := []core.Limit{
		core.PerMinute(3),
		core.PerSecond(7).WithBurst(2).WithName("api.v1"),
		core.Every(1500 * time.Millisecond).WithName("slow"),
	}
	styles := []core.HeaderStyle{core.HeadersBoth, core.HeadersLegacy, core.HeadersIETF, core.HeadersNone}
	for _, l := range limits {
		for _, style := range styles {
			for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA} {
				t.Run(l.String()+"/"+style.String()+"/"+alg.String(), func(t *testing.T) {
					t.Parallel()
					clock := coretest.NewClock(t0)
					base, err := core.New(l.WithAlgorithm(alg), core.WithClock(clock))
					if err != nil {
						t.Fatal(err)
					}
					rec := &recorder{Limiter: base}
					e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.Constant("k"), grpcmw.WithHeaders(style), limitAll))
					ctx := callCtx(t)
					for i := range 5 {
						h, _, err := e.Check(ctx)
						_, _, d := rec.snapshot()
						if d.Allowed != (err == nil) {
							t.Fatalf("call %d: err %v for decision %+v", i, err, d)
						}
						// What httpmw writes for the same decision.
						hh := http.Header{}
						ref := httpmw.MustNew(decided{d}, keyfunc.Constant("k"), httpmw.WithHeaders(style))
						if _, err := ref.Check(hh, httptest.NewRequest(http.MethodGet, "/", nil)); err != nil {
							t.Fatal(err)
						}
						want := metadata.MD{}
						for k, v := range hh {
							want[strings.ToLower(k)] = v
						}
						wantMD(t, "call", h, want)
						if !d.Allowed {
							if got := parseDenial(t, err).retry; got != d.RetryAfter {
								t.Errorf("RetryInfo = %v, want the decision's RetryAfter %v", got, d.RetryAfter)
							}
						}
						clock.Advance(100 * time.Millisecond)
					}
				})
			}
		}
	}
}

// TestPerMethodLimiter: WithLimiterFunc gives a method its own limiter,
// and a nil answer leaves a method unlimited.
func TestPerMethodLimiter(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	def := gcra(t, core.PerMinute(1), clock)
	list := gcra(t, core.PerMinute(2).WithName("list"), clock)
	e := serveLimiter(t, grpcmw.MustNew(nil, grpcmw.Constant("k"),
		grpcmw.WithLimiterFunc(func(_ context.Context, m string) core.Limiter {
			switch m {
			case mList:
				return list
			case mWatch:
				return nil // not limited
			}
			return def
		}),
		limitAll,
		grpcmw.WithHeaders(core.HeadersBoth),
	))
	ctx := callCtx(t)

	if _, _, err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Check(ctx); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second Check: %v, want ResourceExhausted", err)
	}
	// List has its own limiter and policy.
	for i, rem := range []string{"1", "0"} {
		h, err := callList(ctx, e)
		if err != nil {
			t.Fatalf("List %d: %v", i, err)
		}
		if got := h.Get("ratelimit-policy"); !reflect.DeepEqual(got, []string{`"list";q=2;w=60`}) {
			t.Errorf("List policy = %q", got)
		}
		if got := h.Get("x-ratelimit-remaining"); !reflect.DeepEqual(got, []string{rem}) {
			t.Errorf("List remaining = %q, want %s", got, rem)
		}
	}
	_, err := callList(ctx, e)
	if d := parseDenial(t, err); d.subject != "list" || d.desc != "2 per 1m0s" || d.meta["policy"] != "list" {
		t.Errorf("List denial = %+v", d)
	}
	// Watch is not limited: never counted, never limited, no metadata.
	for range 3 {
		st, err := e.Health.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatalf("exempt Watch: %v", err)
		}
		h, _ := st.Header()
		wantMD(t, "exempt stream", h, metadata.MD{})
	}
}

func TestSkip(t *testing.T) {
	t.Parallel()
	lim := gcra(t, core.PerMinute(1), coretest.NewClock(t0))
	e := serveLimiter(t, grpcmw.MustNew(lim, grpcmw.KeyByMetadata("x-api-key"),
		grpcmw.WithSkip(func(ctx context.Context, _ string) bool {
			return len(metadata.ValueFromIncomingContext(ctx, "x-internal")) > 0
		})))
	ctx := metadata.AppendToOutgoingContext(callCtx(t), "x-internal", "1")
	for range 3 {
		h, _, err := e.Check(ctx) // skipped before the key function: no key needed
		if err != nil {
			t.Fatal(err)
		}
		wantMD(t, "skipped call", h, metadata.MD{})
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       []grpcmw.Option
		wantCodes  []codes.Code
		wantCosts  []int
		wantHookIs []error
		wantMsg    string
	}{
		{
			name: "function",
			opts: []grpcmw.Option{grpcmw.WithCost(func(_ context.Context, m string) (int, error) {
				if m != mCheck {
					return 0, errors.New("unexpected method")
				}
				return 2, nil
			})},
			wantCodes: []codes.Code{codes.OK, codes.ResourceExhausted},
			wantCosts: []int{2, 2},
		},
		{
			name:       "never admissible",
			opts:       []grpcmw.Option{grpcmw.WithCost(func(context.Context, string) (int, error) { return 4, nil })},
			wantCodes:  []codes.Code{codes.InvalidArgument, codes.InvalidArgument},
			wantCosts:  []int{4, 4},
			wantHookIs: []error{core.ErrInvalidCost},
			wantMsg:    grpcmw.MessageCostTooLarge,
		},
		{
			name: "function says invalid",
			opts: []grpcmw.Option{grpcmw.WithCost(func(context.Context, string) (int, error) {
				return 0, core.ErrInvalidCost
			})},
			wantCodes:  []codes.Code{codes.InvalidArgument},
			wantHookIs: []error{core.ErrCost, core.ErrInvalidCost},
			wantMsg:    grpcmw.MessageInvalidCost,
		},
		{
			name: "function fails",
			opts: []grpcmw.Option{grpcmw.WithCost(func(context.Context, string) (int, error) {
				return 0, errors.New("secret pricing table unreachable")
			})},
			wantCodes:  []codes.Code{codes.Internal},
			wantHookIs: []error{core.ErrCost},
			wantMsg:    grpcmw.MessageCost,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Limiter: gcra(t, core.PerMinute(3), coretest.NewClock(t0))}
			var mu sync.Mutex
			var hooked []error
			opts := append(tc.opts, hookErrors(func(err error) {
				mu.Lock()
				hooked = append(hooked, err)
				mu.Unlock()
			}))
			e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.Constant("k"), append(opts, limitAll)...))
			ctx := callCtx(t)
			for i, want := range tc.wantCodes {
				_, _, err := e.Check(ctx)
				if status.Code(err) != want {
					t.Fatalf("call %d: %v, want %v", i, err, want)
				}
				if tc.wantMsg != "" {
					if got := status.Convert(err).Message(); got != tc.wantMsg {
						t.Errorf("message %q, want %q", got, tc.wantMsg)
					}
				}
			}
			if _, costs, _ := rec.snapshot(); !reflect.DeepEqual(costs, tc.wantCosts) {
				t.Errorf("costs asked = %v, want %v", costs, tc.wantCosts)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(tc.wantHookIs) == 0 && len(hooked) > 0 {
				t.Errorf("hook called with %v", hooked)
			}
			if len(tc.wantHookIs) > 0 {
				if len(hooked) != len(tc.wantCodes) {
					t.Fatalf("hook called %d times, want %d", len(hooked), len(tc.wantCodes))
				}
				for _, target := range tc.wantHookIs {
					if !errors.Is(hooked[0], target) {
						t.Errorf("hook error %v does not match %v", hooked[0], target)
					}
				}
			}
		})
	}
}

func TestKeyFunctionError(t *testing.T) {
	t.Parallel()
	rec := &recorder{Limiter: gcra(t, core.PerMinute(3), coretest.NewClock(t0))}
	var hooked error
	var mu sync.Mutex
	e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.KeyByMetadata("x-api-key"),
		hookErrors(func(err error) {
			mu.Lock()
			hooked = err
			mu.Unlock()
		}), limitAll))
	h, _, err := e.Check(callCtx(t))
	st := status.Convert(err)
	// A missing x-api-key is the client's to fix, not a server fault.
	if st.Code() != codes.InvalidArgument || st.Message() != grpcmw.MessageBadKey || len(st.Details()) != 0 {
		t.Fatalf("status = %v %q %v, want InvalidArgument %q without details", st.Code(), st.Message(), st.Details(), grpcmw.MessageBadKey)
	}
	if strings.Contains(st.Message(), "x-api-key") {
		t.Errorf("message leaks the key function's error: %q", st.Message())
	}
	wantMD(t, "key failure", h, metadata.MD{})
	if keys, _, _ := rec.snapshot(); len(keys) != 0 {
		t.Errorf("limiter asked about %q after the key function failed", keys)
	}
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(hooked, core.ErrKey) || !errors.Is(hooked, keyfunc.ErrNoKey) {
		t.Errorf("hook got %v, want ErrKey wrapping keyfunc.ErrNoKey", hooked)
	}

	// With the metadata, the call is keyed by it.
	ctx := metadata.AppendToOutgoingContext(callCtx(t), "X-API-Key", "tenant-7")
	if _, _, err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, _, _ := rec.snapshot(); !reflect.DeepEqual(keys, []string{"tenant-7"}) {
		t.Errorf("keys = %q, want [tenant-7]", keys)
	}
}

// failing is a core.Limiter whose store is down.
type failing struct{ err error }

func (f failing) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failing) Refund(context.Context, string, int) error { return f.err }

func TestStoreFailure(t *testing.T) {
	t.Parallel()
	storeErr := &core.StoreError{Op: "allow", Err: errors.New("dial tcp 10.9.8.7:6379: connection refused")}
	tests := []struct {
		name string
		mode []grpcmw.Option
		open bool
	}{
		{"default is closed", nil, false},
		{"closed", []grpcmw.Option{grpcmw.WithFailureMode(core.FailClosed)}, false},
		{"open", []grpcmw.Option{grpcmw.WithFailureMode(core.FailOpen)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var hooked []error
			opts := append(tc.mode, hookErrors(func(err error) {
				mu.Lock()
				defer mu.Unlock()
				hooked = append(hooked, err)
			}))
			e := serveLimiter(t, grpcmw.MustNew(failing{storeErr}, grpcmw.Constant("k"), append(opts, limitAll)...))
			ctx := callCtx(t)
			h, tr, err := e.Check(ctx)
			if tc.open {
				if err != nil {
					t.Fatalf("FailOpen: %v", err)
				}
				wantMD(t, "failed open", h, metadata.MD{})
			} else {
				got := parseDenial(t, err)
				want := denial{
					code: codes.ResourceExhausted, msg: grpcmw.MessageUnavailable, retry: time.Second,
					reason: grpcmw.ReasonUnavailable, domain: grpcmw.Domain, details: 2,
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("FailClosed status\n got %+v\nwant %+v", got, want)
				}
				wantMD(t, "failed closed", h, metadata.MD{"retry-after": {"1"}})
				if v := tr.Get(grpcmw.PushbackKey); !reflect.DeepEqual(v, []string{"1000"}) {
					t.Errorf("pushback = %q, want [1000]", v)
				}
			}
			// Streams follow the same mode.
			st, err := e.Health.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = st.Recv()
			if tc.open != (err == nil) {
				t.Errorf("Watch under %s: %v", tc.name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hooked) != 2 || !errors.Is(hooked[0], core.ErrStore) || !errors.Is(hooked[1], core.ErrStore) {
				t.Errorf("hook got %v, want two store errors", hooked)
			}
		})
	}
}

func TestStreamOpenChecked(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	e := serveLimiter(t, grpcmw.MustNew(gcra(t, core.PerMinute(1).WithName("watch"), clock), grpcmw.Constant("k"), limitAll))
	ctx := callCtx(t)

	st, err := e.Health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := st.Recv(); err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first Watch: %v, %v", resp, err)
	}
	h, _ := st.Header()
	wantMD(t, "admitted stream", h, allowedMD(`"watch";q=1;w=60`, "1", "0", "60", `"watch";r=0;t=60`))

	st2, err := e.Health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st2.Recv()
	got := parseDenial(t, err)
	if got.code != codes.ResourceExhausted || got.retry != time.Minute || got.subject != "watch" || got.reason != grpcmw.ReasonRateLimited {
		t.Errorf("second Watch: %+v", got)
	}
	h2, _ := st2.Header()
	want := allowedMD(`"watch";q=1;w=60`, "1", "0", "60", `"watch";r=0;t=60`)
	want["retry-after"] = []string{"60"}
	wantMD(t, "refused stream", h2, want)
	if v := st2.Trailer().Get(grpcmw.PushbackKey); !reflect.DeepEqual(v, []string{"60000"}) {
		t.Errorf("pushback = %q", v)
	}
}

func TestMeterMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []grpcmw.Option
		exchange int
		wantSent int
		wantCode codes.Code
	}{
		// Burst 4: the open costs 1, then three messages pass.
		{"metered", []grpcmw.Option{grpcmw.WithMeterMessages()}, 10, 3, codes.ResourceExhausted},
		{"not metered", nil, 10, 10, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Limiter: gcra(t, core.PerMinute(4), coretest.NewClock(t0))}
			e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.Constant("k"), append(tc.opts, limitAll)...))
			sent, err := e.Chat(callCtx(t), tc.exchange)
			if sent != tc.wantSent || status.Code(err) != tc.wantCode {
				t.Fatalf("exchanged %d, err %v; want %d, %v", sent, err, tc.wantSent, tc.wantCode)
			}
			if tc.wantCode == codes.ResourceExhausted {
				d := parseDenial(t, err)
				if d.msg != grpcmw.MessageDenied || d.retry != 15*time.Second || d.reason != grpcmw.ReasonRateLimited {
					t.Errorf("message refusal = %+v", d)
				}
			}
			keys, costs, _ := rec.snapshot()
			wantAsked := 1
			if tc.wantCode != codes.OK {
				wantAsked = 1 + tc.wantSent + 1
			}
			if len(keys) != wantAsked {
				t.Errorf("limiter asked %d times (%v), want %d", len(keys), costs, wantAsked)
			}
		})
	}
}

// shaper admits every call with a fixed delay.
type shaper struct {
	delay time.Duration
	mu    sync.Mutex
	refs  []string
}

func (s *shaper) Allow(context.Context, string, int) (core.Decision, error) {
	return core.Decision{Allowed: true, Limit: core.PerSecond(10), Remaining: 0, ResetAfter: time.Second, Delay: s.delay}, nil
}

func (s *shaper) Refund(_ context.Context, key string, cost int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs = append(s.refs, key)
	return nil
}

// fakeTransport lets interceptors be called directly, outside a server,
// with header and trailer metadata kept for inspection.
type fakeTransport struct {
	method          string
	header, trailer metadata.MD
}

func (f *fakeTransport) Method() string { return f.method }
func (f *fakeTransport) SetHeader(md metadata.MD) error {
	f.header = metadata.Join(f.header, md)
	return nil
}
func (f *fakeTransport) SendHeader(md metadata.MD) error { return f.SetHeader(md) }
func (f *fakeTransport) SetTrailer(md metadata.MD) error {
	f.trailer = metadata.Join(f.trailer, md)
	return nil
}

func TestShaping(t *testing.T) {
	t.Parallel()
	t.Run("waits its turn", func(t *testing.T) {
		t.Parallel()
		sh := &shaper{delay: time.Millisecond}
		e := serveLimiter(t, grpcmw.MustNew(sh, grpcmw.Constant("k"), limitAll))
		if _, _, err := e.Check(callCtx(t)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("context ends first", func(t *testing.T) {
		t.Parallel()
		sh := &shaper{delay: time.Hour}
		var hooked error
		l := grpcmw.MustNew(sh, grpcmw.Constant("k"), hookErrors(func(err error) {
			hooked = err
		}), limitAll)
		ft := &fakeTransport{method: mCheck}
		ctx, cancel := context.WithCancel(grpc.NewContextWithServerTransportStream(context.Background(), ft))
		cancel()
		called := false
		_, err := l.UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: mCheck},
			func(context.Context, any) (any, error) { called = true; return nil, nil })
		if status.Code(err) != codes.Canceled || called {
			t.Fatalf("err %v, handler called %v; want Canceled, not called", err, called)
		}
		if !reflect.DeepEqual(sh.refs, []string{"k"}) {
			t.Errorf("refunds = %q, want [k]", sh.refs)
		}
		if !errors.Is(hooked, core.ErrWaitCanceled) || !errors.Is(hooked, context.Canceled) {
			t.Errorf("hook got %v", hooked)
		}
		if len(ft.header) != 0 {
			t.Errorf("metadata set on a call that never ran: %v", ft.header)
		}
	})
}

func TestKeyByPeerIPOverTCP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []keyfunc.Option
		xff      []string
		wantKey  string
		wantCode codes.Code
	}{
		{"peer", nil, nil, "127.0.0.1", codes.OK},
		{"header ignored from untrusted peer", nil, []string{"203.0.113.7"}, "127.0.0.1", codes.OK},
		{"trusted gateway", []keyfunc.Option{keyfunc.WithTrustedProxies("127.0.0.1")}, []string{"6.6.6.6, 203.0.113.7"}, "203.0.113.7", codes.OK},
		{"trusted gateway, two lines", []keyfunc.Option{keyfunc.WithTrustedProxies("127.0.0.0/8", "10.0.0.0/8")}, []string{"203.0.113.7", "10.0.0.2"}, "203.0.113.7", codes.OK},
		{"trusted gateway, no header", []keyfunc.Option{keyfunc.WithTrustedProxies("127.0.0.1")}, nil, "127.0.0.1", codes.OK},
		{"trusted gateway, bad header", []keyfunc.Option{keyfunc.WithTrustedProxies("127.0.0.1")}, []string{"unknown"}, "", codes.InvalidArgument},
		{"other header", []keyfunc.Option{keyfunc.WithTrustedProxies("127.0.0.1"), keyfunc.WithHeader("X-Real-IP")}, []string{"203.0.113.9"}, "127.0.0.1", codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{Limiter: gcra(t, core.PerMinute(10), coretest.NewClock(t0))}
			e := serveLimiter(t, grpcmw.MustNew(rec, grpcmw.MustKeyByPeerIP(tc.opts...), limitAll))
			ctx := callCtx(t)
			for _, v := range tc.xff {
				ctx = metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", v)
			}
			_, _, err := e.Check(ctx)
			if status.Code(err) != tc.wantCode {
				t.Fatalf("err %v, want %v", err, tc.wantCode)
			}
			keys, _, _ := rec.snapshot()
			if tc.wantKey == "" {
				if len(keys) != 0 {
					t.Errorf("keys %q, want none", keys)
				}
				return
			}
			if !reflect.DeepEqual(keys, []string{tc.wantKey}) {
				t.Errorf("keys %q, want [%s]", keys, tc.wantKey)
			}
		})
	}
}

func TestBridge(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	l := grpcmw.MustNew(gcra(t, core.PerMinute(1), clock), grpcmw.Constant("k"), limitAll)
	var _ ratelimit.Limiter = l

	e := grpctest.Serve(t, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(l)),
		grpc.ChainStreamInterceptor(ratelimit.StreamServerInterceptor(l)),
	})
	ctx := callCtx(t)
	h, _, err := e.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantMD(t, "bridge admitted", h, allowedMD(`"default";q=1;w=60`, "1", "0", "60", `"default";r=0;t=60`))

	// Their interceptor flattens our status into its own message: the
	// code survives, the details do not; our metadata and trailer still go
	// out, since Limit sets them itself.
	h, tr, err := e.Check(ctx)
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || len(st.Details()) != 0 || !strings.Contains(st.Message(), grpcmw.MessageDenied) {
		t.Errorf("bridged denial = %v %q %v", st.Code(), st.Message(), st.Details())
	}
	if got := h.Get("retry-after"); !reflect.DeepEqual(got, []string{"60"}) {
		t.Errorf("retry-after = %q", got)
	}
	if got := tr.Get(grpcmw.PushbackKey); !reflect.DeepEqual(got, []string{"60000"}) {
		t.Errorf("pushback = %q", got)
	}

	// Called directly, Limit returns the full status.
	ft := &fakeTransport{method: mCheck}
	err = l.Limit(grpc.NewContextWithServerTransportStream(context.Background(), ft))
	if d := parseDenial(t, err); d.retry != time.Minute || d.details != 3 {
		t.Errorf("Limit = %+v", d)
	}
	clock.Advance(time.Minute)
	if err := l.Limit(grpc.NewContextWithServerTransportStream(context.Background(), ft)); err != nil {
		t.Errorf("Limit after a minute: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	lim := core.MustNew(core.PerSecond(1))
	key := grpcmw.Constant("k")
	tests := []struct {
		name string
		lim  core.Limiter
		key  grpcmw.KeyFunc
		opts []grpcmw.Option
	}{
		{"nil limiter", nil, key, nil},
		{"nil key", lim, nil, nil},
		{"nil option", lim, key, []grpcmw.Option{nil}},
		{"limiter and limiter function", lim, key, []grpcmw.Option{grpcmw.WithLimiterFunc(func(context.Context, string) core.Limiter { return lim })}},
		{"nil limiter function", nil, key, []grpcmw.Option{grpcmw.WithLimiterFunc(nil)}},
		{"nil observer", lim, key, []grpcmw.Option{grpcmw.WithObserver(nil)}},
		{"bad hold", lim, key, []grpcmw.Option{grpcmw.WithDenialHold(0, 1)}},
		{"nil cost", lim, key, []grpcmw.Option{grpcmw.WithCost(nil)}},
		{"bad mode", lim, key, []grpcmw.Option{grpcmw.WithFailureMode(7)}},
		{"bad style", lim, key, []grpcmw.Option{grpcmw.WithHeaders(9)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := grpcmw.New(tc.lim, tc.key, append(tc.opts, limitAll)...)
			if err == nil || l != nil {
				t.Fatalf("New = %v, %v; want an error", l, err)
			}
			if !strings.HasPrefix(err.Error(), "grpcmw: ") {
				t.Errorf("error %q does not start with \"grpcmw: \"", err)
			}
		})
	}
	if _, err := grpcmw.KeyByPeerIP(keyfunc.WithTrustedProxies("0.0.0.0/0")); err == nil {
		t.Error("KeyByPeerIP accepted a /0 range")
	}
}
