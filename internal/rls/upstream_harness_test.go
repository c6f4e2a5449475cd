package rls_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
	"github.com/floodgate/floodgate/redisstore"
)

// This file is the harness of upstream_service_test.go: envoyproxy/
// ratelimit's test cases as rows, each run on the in-memory store and on
// Redis (the limiters and redisstore.Multi, as cmd/floodgate-ratelimit
// builds them).

// portRow is one of envoyproxy/ratelimit's test cases.
type portRow struct {
	source string   // upstream's file and test
	yaml   []string // the configuration's files; none: no configuration loaded
	config rls.Config
	// upstream, when set, marks a documented difference (docs/envoy.md):
	// it sets the Config field that gives upstream's answer, with which
	// the row must pass; without it, the row must fail.
	upstream func(*rls.Config)
	down     bool // the store is down
	steps    []portStep
}

// portStep sends pre's requests (unchecked, their statistics not
// counted), then req, and checks the answer.
type portStep struct {
	pre     []fill
	advance time.Duration // the clock moves on first (in memory; on Redis, time passes)
	req     *rlsv3.RateLimitRequest
	want    *rlsv3.RateLimitResponse // each status with a limit gets its unit's window's reset
	err     bool                     // want an error instead
	stats   map[string]rls.Counts    // counters so far, since the row began
	hits    map[string][2]uint64     // total_hits and over_limit so far, where upstream checks those alone
}

type fill struct {
	req *rlsv3.RateLimitRequest
	n   int
}

// rq is a request in domain with the request's hits_addend.
func rq(domain string, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits}
}

// dh is a descriptor with its own hits_addend.
func dh(hits uint64, kvs ...string) *rlcommon.RateLimitDescriptor {
	d := desc(kvs...)
	d.HitsAddend = wrapperspb.UInt64(hits)
	return d
}

const (
	sec  = rlsv3.RateLimitResponse_RateLimit_SECOND
	mnt  = rlsv3.RateLimitResponse_RateLimit_MINUTE
	hour = rlsv3.RateLimitResponse_RateLimit_HOUR
	day  = rlsv3.RateLimitResponse_RateLimit_DAY
)

// resp is a response of the overall code and statuses.
func resp(code rlsv3.RateLimitResponse_Code, sts ...*rlsv3.RateLimitResponse_DescriptorStatus) *rlsv3.RateLimitResponse {
	return &rlsv3.RateLimitResponse{OverallCode: code, Statuses: sts}
}

const (
	OK   = rlsv3.RateLimitResponse_OK
	OVER = rlsv3.RateLimitResponse_OVER_LIMIT
)

// st is a status under a limit of rpu per unit.
func st(code rlsv3.RateLimitResponse_Code, rpu uint32, unit rlsv3.RateLimitResponse_RateLimit_Unit, remaining uint32) *rlsv3.RateLimitResponse_DescriptorStatus {
	return &rlsv3.RateLimitResponse_DescriptorStatus{Code: code, LimitRemaining: remaining,
		CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{RequestsPerUnit: rpu, Unit: unit}}
}

// named is s with its limit's name.
func named(s *rlsv3.RateLimitResponse_DescriptorStatus, name string) *rlsv3.RateLimitResponse_DescriptorStatus {
	s.CurrentLimit.Name = name
	return s
}

// none is the status of a descriptor no rule limits.
func none() *rlsv3.RateLimitResponse_DescriptorStatus {
	return &rlsv3.RateLimitResponse_DescriptorStatus{Code: OK}
}

// unlimited is an unlimited rule's status.
func unlimited() *rlsv3.RateLimitResponse_DescriptorStatus {
	return &rlsv3.RateLimitResponse_DescriptorStatus{Code: OK, LimitRemaining: 1<<32 - 1}
}

// withHeaders is r with header fields; a value "@UNIT" is the seconds
// left in that unit's window.
func withHeaders(r *rlsv3.RateLimitResponse, kvs ...string) *rlsv3.RateLimitResponse {
	for i := 0; i+1 < len(kvs); i += 2 {
		r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, &corev3.HeaderValue{Key: kvs[i], Value: kvs[i+1]})
	}
	return r
}

// windowLeft is the seconds until t's window of unit ends, windows
// starting at the Unix epoch (envoyproxy/ratelimit's CalculateReset).
func windowLeft(unit rlsv3.RateLimitResponse_RateLimit_Unit, t time.Time) int64 {
	p := int64(rlsconfig.Unit(unit).Period() / time.Second)
	return p - t.Unix()%p
}

// at is want with the resets of the instant t filled in.
func at(want *rlsv3.RateLimitResponse, t time.Time) *rlsv3.RateLimitResponse {
	w := proto.Clone(want).(*rlsv3.RateLimitResponse)
	for _, s := range w.Statuses {
		if l := s.GetCurrentLimit(); l != nil {
			s.DurationUntilReset = durationpb.New(time.Duration(windowLeft(l.GetUnit(), t)) * time.Second)
		}
	}
	for _, h := range w.ResponseHeadersToAdd {
		if u, ok := strings.CutPrefix(h.Value, "@"); ok {
			h.Value = strconv.FormatInt(windowLeft(rlsv3.RateLimitResponse_RateLimit_Unit(rlsv3.RateLimitResponse_RateLimit_Unit_value[u]), t), 10)
		}
	}
	return w
}

// statsRecorder adds up what Config.Stats hears, but while muted.
type statsRecorder struct {
	mu    sync.Mutex
	muted atomic.Bool
	c     map[string]rls.Counts
}

func (r *statsRecorder) Add(key string, c rls.Counts) {
	if r.muted.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.c == nil {
		r.c = map[string]rls.Counts{}
	}
	s := r.c[key]
	s.TotalHits += c.TotalHits
	s.OverLimit += c.OverLimit
	s.NearLimit += c.NearLimit
	s.WithinLimit += c.WithinLimit
	s.ShadowMode += c.ShadowMode
	s.OverLimitWithLocalCache += c.OverLimitWithLocalCache
	r.c[key] = s
}

func (r *statsRecorder) get(key string) (rls.Counts, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.c[key]
	return c, ok
}

// backend is a store the rows run on.
type backend struct {
	name string
	// make returns the store and Multi of one run; the clock is nil on
	// Redis, which decides at its own time.
	make func(t *testing.T, down bool) (rls.Store, rls.Multi, *coretest.Clock)
}

// memoryBackend is core's in-memory store on a frozen clock, 2 s into a
// minute (upstream's service tests run at 2222: their minute's reset is 58).
func memoryBackend() backend {
	return backend{name: "memory", make: func(t *testing.T, down bool) (rls.Store, rls.Multi, *coretest.Clock) {
		clock := coretest.NewClock(time.Unix(1_800_000_002, 0))
		if down {
			return func([]core.Limit) (core.Limiter, error) {
				return coretest.StoreDown(errors.New("connection refused")), nil
			}, nil, clock
		}
		return rls.Memory(core.WithClock(clock)), nil, clock
	}}
}

// redisBackend is one Redis server, emptied for each run, with
// redisstore's limiters and Multi; a store that is down is one at an
// address nothing listens on.
func redisBackend(t *testing.T) backend {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return backend{name: "redis", make: func(t *testing.T, down bool) (rls.Store, rls.Multi, *coretest.Clock) {
		cl := c
		if down {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			_ = l.Close()
			// 1 ms between dial attempts, not go-redis's 100 ms: each call
			// dials five times, and the rows count answers, not dial time.
			cl = redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetryTimeout: time.Millisecond})
			t.Cleanup(func() { _ = cl.Close() })
		} else if err := c.FlushDB(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		store := func(limits []core.Limit) (core.Limiter, error) {
			if len(limits) == 1 {
				return redisstore.New(cl, limits[0])
			}
			return redisstore.NewStack(cl, limits)
		}
		m, err := redisstore.NewMulti(cl)
		if err != nil {
			t.Fatal(err)
		}
		return store, redisMulti{m}, nil
	}}
}

// redisMulti is a redisstore.Multi as the service takes it (as
// cmd/floodgate-ratelimit's).
type redisMulti struct{ m *redisstore.Multi }

func (r redisMulti) AllowAll(ctx context.Context, cs []rls.Charge) ([]core.Decision, error) {
	ds, err := r.m.Allow(ctx, redisItems(cs))
	if errors.Is(err, redisstore.ErrPartial) {
		err = fmt.Errorf("%w (%w)", err, rls.ErrPartial)
	}
	return ds, err
}

func (r redisMulti) RefundAll(ctx context.Context, cs []rls.Charge) error {
	return r.m.Refund(ctx, redisItems(cs))
}

func redisItems(cs []rls.Charge) []redisstore.Item {
	out := make([]redisstore.Item, len(cs))
	for i, c := range cs {
		out[i] = redisstore.Item{Key: c.Key, Limits: c.Limits, Cost: c.Cost}
	}
	return out
}

// runPort runs every row on every backend: a row without upstream must
// pass; one with it must pass with it, and fail without it (the
// difference is real, and that field turns it off). Every row runs
// without floodgate's header fields (core.HeadersNone), as upstream's
// default sends none (LIMIT_RESPONSE_HEADERS_ENABLED=false).
func runPort(t *testing.T, rows []portRow) {
	backends := []backend{memoryBackend(), redisBackend(t)}
	for _, b := range backends {
		for _, row := range rows {
			t.Run(b.name+"/"+row.source, func(t *testing.T) {
				c := row.config
				c.Headers = core.HeadersNone
				if row.upstream != nil {
					if err := runRow(t, b, row, c); err == nil {
						t.Errorf("without the upstream setting the row passes: the documented difference is not there")
					}
					row.upstream(&c)
				}
				if err := runRow(t, b, row, c); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// runRow runs row once, again on Redis when a window ended while it ran
// (its answers then belong to two windows).
func runRow(t *testing.T, b backend, row portRow, c rls.Config) error {
	for attempt := 0; ; attempt++ {
		start := time.Now()
		err := runOnce(t, b, row, c)
		if err == nil || b.name == "memory" || sameWindow(start, time.Now()) || attempt == 2 {
			return err
		}
	}
}

// sameWindow reports whether a and b are in the same second (and so in
// the same window of every unit).
func sameWindow(a, b time.Time) bool { return a.Unix() == b.Unix() }

func runOnce(t *testing.T, b backend, row portRow, c rls.Config) error {
	store, multi, clock := b.make(t, row.down)
	rec := &statsRecorder{}
	c.Store, c.Multi, c.Stats = store, multi, rec
	if clock != nil {
		c.Clock = clock
	}
	svc, err := rls.New(c)
	if err != nil {
		return err
	}
	if len(row.yaml) > 0 {
		var ds []*rlsconfig.Domain
		for i, y := range row.yaml {
			d, err := rlsconfig.Parse(fmt.Sprintf("row%d.yaml", i), []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		conf, err := rlsconfig.Of(ds)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.SetRules(rls.FromConfig(conf)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for i, s := range row.steps {
		if s.advance > 0 && clock != nil {
			clock.Advance(s.advance)
		}
		rec.muted.Store(true)
		for _, f := range s.pre {
			for range f.n {
				if _, err := svc.ShouldRateLimit(ctx, f.req); err != nil {
					t.Fatalf("step %d: filling: %v", i, err)
				}
			}
		}
		rec.muted.Store(false)
		t0 := time.Now()
		if clock != nil {
			t0 = clock.Time()
		}
		got, err := svc.ShouldRateLimit(ctx, s.req)
		t1 := time.Now()
		if clock != nil {
			t1 = t0
		}
		if s.err {
			if err == nil {
				return fmt.Errorf("step %d: %v, want an error", i, got)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("step %d: %v (%v)", i, err, status.Code(err))
		}
		if w := at(s.want, t0); !proto.Equal(got, w) && !proto.Equal(got, at(s.want, t1)) {
			return fmt.Errorf("step %d:\n got %v\nwant %v", i, got, w)
		}
		for key, want := range s.stats {
			if c, _ := rec.get(key); c != want {
				return fmt.Errorf("step %d: counters of %s: %+v, want %+v", i, key, c, want)
			}
		}
		for key, want := range s.hits {
			if c, _ := rec.get(key); c.TotalHits != want[0] || c.OverLimit != want[1] {
				return fmt.Errorf("step %d: %s: total_hits %d and over_limit %d, want %d and %d", i, key, c.TotalHits, c.OverLimit, want[0], want[1])
			}
		}
	}
	return nil
}
