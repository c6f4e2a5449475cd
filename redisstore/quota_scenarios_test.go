package redisstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/redisstore"
)

// scene is one row of TestQuotaScenarios being played: instances of one
// limit (a Dynamic's when the row is, whose limit the row changes), on the
// rig's fake clock, and each instance's decisions as letters: 'a' admitted
// by a round trip (cold), 'G' by the call that took a lease (from its
// first units, a decision from the lease), 'L' admitted from a lease, 'x'
// refused by Redis (a cold call's, or a grant's) and 'X' refused here.
type scene struct {
	t     *testing.T
	c     redis.UniversalClient
	r     *quotaRig
	limit atomic.Pointer[core.Limit] // in force: the Dynamic's answer
	got   []strings.Builder
}

// call makes n calls of cost 1 on instance i, checking that each names the
// limit in force.
func (s *scene) call(i, n int) {
	s.t.Helper()
	for range n {
		g0, _, _ := redisstore.QuotaCounts(s.r.all[i])
		d := s.r.allow(i, "k")
		if want := *s.limit.Load(); d.Limit != want {
			s.t.Fatalf("instance %d, after %q: Decision.Limit %v, want the limit in force %v", i, s.got[i].String(), d.Limit, want)
		}
		c := map[[2]bool]byte{{true, false}: 'a', {true, true}: 'L', {false, false}: 'x', {false, true}: 'X'}[[2]bool{d.Allowed, d.Leased}]
		if g1, _, _ := redisstore.QuotaCounts(s.r.all[i]); c == 'L' && g1 > g0 {
			c = 'G'
		}
		s.got[i].WriteByte(c)
	}
}

// held returns the units instance i holds for the key.
func (s *scene) held(i int) int64 {
	u, _ := redisstore.QuotaHeld(s.r.all[i], "k")
	return u
}

// left is what the key's state still admits under the limit in force, at
// the clock's instant, to a limiter of the same kind without local quota:
// the limit's burst less what the state holds charged.
func (s *scene) left() int {
	s.t.Helper()
	l := *s.limit.Load()
	o := []redisstore.Option{redisstore.WithClock(s.r.clk), redisstore.WithScriptClock(s.r.clk),
		redisstore.WithPrefix(s.r.prefix), redisstore.WithDenyCache(0)}
	var plain core.Limiter
	var err error
	if s.r.lims == nil {
		plain, err = redisstore.NewDynamic(s.c, func(string) core.Limit { return l }, o...)
	} else {
		plain, err = redisstore.New(s.c, l, o...)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	for n := 0; n <= l.EffectiveBurst(); n++ {
		d, err := plain.Allow(context.Background(), "k", 1)
		if err != nil {
			s.t.Fatal(err)
		}
		if !d.Allowed {
			return n
		}
	}
	s.t.Fatalf("more than the burst admitted under %v", l)
	return 0
}

// TestQuotaScenarios walks a hot key through the life of its leases, one
// row per stage, on the fake clock and a real Redis: the grant, spending
// it, the return of what is left when a lease is replaced, its expiry (at
// L; a fixed window's with its window), the resizing of leases to the
// key's demand and holders, and a limit that changes under a lease
// (Dynamic). Each row states every decision (admitted or not, from a
// lease or not), what the key's state holds charged at the end (the
// burst less what a plain limiter still admits), the units each instance
// still holds, gave back and the grants it made.
//
// Unless a row says otherwise the limit refills one unit every 5 minutes
// (nothing, over the seconds a row lasts), a lease lasts 1 s (a tenth of
// the period, at most 1 s) and 4 calls within one make a key hot. A lease
// asks for the key's demand over one length and a quarter more (4 calls:
// 5 units; 7: 9; 14: 18...), at most half the burst shared among the
// instances holding one, and the call that takes it below a quarter asks
// for the next.
func TestQuotaScenarios(t *testing.T) {
	t.Parallel()
	c := single(t)
	slow := func(n int) core.Limit {
		return core.Limit{Events: n, Period: time.Duration(n) * 5 * time.Minute, Burst: n}
	}
	all := []core.Algorithm{core.GCRA, core.TokenBucket, core.FixedWindow}
	type want struct {
		decisions []string // each instance's
		charged   int      // units the key's state holds charged under the limit in force
		held      []int64  // units each instance holds at the end
		returned  []int64  // units each instance gave back (QuotaCounts)
		grants    []uint64 // each instance's grants
	}
	for _, row := range []struct {
		name      string
		algs      []core.Algorithm
		limit     core.Limit
		dynamic   bool          // the instances are Dynamic limiters of limit, which run may change
		length    time.Duration // LocalQuota.Length; 0: the default
		instances int
		run       func(s *scene)
		want      want
	}{
		{
			// Three cold calls, each a round trip; the fourth makes the key
			// hot and takes a lease of 5, spends one and holds 4.
			name: "grant", algs: all, limit: slow(100), instances: 1,
			run:  func(s *scene) { s.call(0, 4) },
			want: want{decisions: []string{"aaaG"}, charged: 8, held: []int64{4}, returned: []int64{0}, grants: []uint64{1}},
		},
		{
			// Two calls from the lease, in memory: Redis is charged nothing
			// more.
			name: "spend", algs: all, limit: slow(100), instances: 1,
			run:  func(s *scene) { s.call(0, 6) },
			want: want{decisions: []string{"aaaGLL"}, charged: 8, held: []int64{2}, returned: []int64{0}, grants: []uint64{1}},
		},
		{
			// The lease pays four calls; the ninth finds it spent and takes
			// the next (9 calls: 12 units). Nothing was asked while the lease
			// could pay, so nothing goes back.
			name: "replace", algs: all, limit: slow(100), instances: 1,
			run:  func(s *scene) { s.call(0, 9) },
			want: want{decisions: []string{"aaaGLLLLG"}, charged: 3 + 5 + 12, held: []int64{11}, returned: []int64{0}, grants: []uint64{1 + 1}},
		},
		{
			// The lease is in force until L has passed since its grant was
			// sent, and not after: its 2 units go back at its end. The next
			// call, the key still hot (6 calls over the last length), takes
			// a new lease of 8.
			name: "expiry", algs: all, limit: slow(100), instances: 1,
			run: func(s *scene) {
				s.call(0, 5)
				s.r.clk.Advance(time.Second - time.Nanosecond)
				s.call(0, 1)
				s.r.clk.Advance(time.Nanosecond)
				s.r.fire()
				if u := s.held(0); u != 0 {
					s.t.Errorf("the lease ended holding %d", u)
				}
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLLG"}, charged: 3 + 5 - 2 + 8, held: []int64{7}, returned: []int64{2}, grants: []uint64{2}},
		},
		{
			// A fixed window's lease ends with its window, 300 ms after the
			// grant (before L): the call at the turn finds it over, and takes
			// a lease in the new window (6 calls within L: 8 units). The 3
			// units given back name the old window, which Redis no longer
			// counts: the new window is charged the new lease alone.
			name: "expiry with the window", algs: []core.Algorithm{core.FixedWindow}, limit: core.PerMinute(100), instances: 1,
			run: func(s *scene) {
				turn := coretest.T0.Truncate(time.Minute).Add(time.Minute)
				s.r.clk.Set(turn.Add(-300 * time.Millisecond))
				s.call(0, 5)
				s.r.clk.Set(turn)
				s.r.fire()
				if u := s.held(0); u != 0 {
					s.t.Errorf("the lease outlived its window holding %d", u)
				}
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 8, held: []int64{7}, returned: []int64{3}, grants: []uint64{2}},
		},
		{
			// Leases follow the key's demand, each taken when the last is
			// spent: on instance 0, 5 and 12 units at its 4th and 9th calls;
			// on instance 1, 5, 12 and 27 at its 4th, 9th and 21st, and at
			// its 48th a lease that would be 60 but is half the burst shared
			// between the 2 holders: 50.
			name: "resize", algs: all, limit: slow(200), instances: 2,
			run: func(s *scene) {
				s.call(0, 14)
				s.call(1, 55)
				if _, h := redisstore.QuotaHeld(s.r.all[1], "k"); h != 2 {
					s.t.Errorf("instance 1's grant counted %d holders, want 2", h)
				}
			},
			want: want{
				decisions: []string{"aaaGLLLLG" + strings.Repeat("L", 5), "aaaGLLLLG" + strings.Repeat("L", 11) + "G" + strings.Repeat("L", 26) + "G" + strings.Repeat("L", 7)},
				charged:   (3 + 5 + 12) + (3 + 5 + 12 + 27 + 50),
				held:      []int64{6, 42}, returned: []int64{0, 0}, grants: []uint64{2, 4},
			},
		},
		{
			// GCRA, the interval from 1 to 2 minutes (a span of 100 minutes
			// both). The call under the new limit ends the lease holding 3:
			// they go back as the time they were charged, 3 minutes (under
			// the new limit, 1.5 units; given back as 3 units of it, twice
			// as much). The call takes a lease of 8 units of 2 minutes. The
			// state: 3 + 5 - 3 minutes, then 16: 21 of 100 minutes charged,
			// 39 units of 2 minutes left (40 giving back too much, 38 giving
			// back nothing).
			name: "limit change/GCRA", algs: []core.Algorithm{core.GCRA}, dynamic: true, instances: 1,
			limit: core.Limit{Events: 100, Period: 100 * time.Minute, Burst: 100},
			run: func(s *scene) {
				s.call(0, 5)
				s.limit.Store(&core.Limit{Events: 50, Period: 100 * time.Minute, Burst: 50, Algorithm: core.GCRA})
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 50 - 39, held: []int64{7}, returned: []int64{3}, grants: []uint64{2}},
		},
		{
			// Token bucket, from 1 unit a second to 1 every 5 minutes, 30 s
			// into a lease of 1 minute. The 3 units left go back as 3 tokens
			// under the new limit, which refilled 0.1 since the grant; given
			// back under the old one, the 30 s would refill 30 more. The
			// call takes a lease of 8 (6 calls over a minute). 100 - 8 + 3 -
			// 8 + 0.1 tokens: 87 left.
			name: "limit change/token bucket", algs: []core.Algorithm{core.TokenBucket}, dynamic: true, instances: 1,
			limit: core.Limit{Events: 100, Period: 100 * time.Second, Burst: 100}, length: time.Minute,
			run: func(s *scene) {
				s.call(0, 5)
				s.r.clk.Advance(30 * time.Second)
				s.limit.Store(&core.Limit{Events: 100, Period: 500 * time.Minute, Burst: 100, Algorithm: core.TokenBucket})
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 100 - 87, held: []int64{7}, returned: []int64{3}, grants: []uint64{2}},
		},
		{
			// The same change, seen by no call before the lease ends: at its
			// end, a minute after the grant, its 3 units go back under the
			// limit the key has then, which refilled 0.2 since the grant
			// (given back under the old one, the minute would refill it
			// whole). The next call takes a lease of 7 (5 calls over the last
			// minute). 100 - 8 + 0.2 + 3 - 7 tokens: 88 left (93 given back
			// under the old limit).
			name: "limit change/token bucket, at the lease's end", algs: []core.Algorithm{core.TokenBucket}, dynamic: true, instances: 1,
			limit: core.Limit{Events: 100, Period: 100 * time.Second, Burst: 100}, length: time.Minute,
			run: func(s *scene) {
				s.call(0, 5)
				s.r.clk.Advance(30 * time.Second)
				s.limit.Store(&core.Limit{Events: 100, Period: 500 * time.Minute, Burst: 100, Algorithm: core.TokenBucket})
				s.r.clk.Advance(30 * time.Second)
				s.r.fire()
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 100 - 88, held: []int64{6}, returned: []int64{3}, grants: []uint64{2}},
		},
		{
			// Fixed window, from 100 to 50 per 500 minutes: the same
			// windows. The 3 units left go back to the window they were
			// charged to; the call takes a lease of 8: 8 - 3 + 8 counted.
			name: "limit change/fixed window, same period", algs: []core.Algorithm{core.FixedWindow}, dynamic: true, instances: 1,
			limit: slow(100),
			run: func(s *scene) {
				s.call(0, 5)
				s.limit.Store(&core.Limit{Events: 50, Period: 500 * time.Minute, Burst: 50, Algorithm: core.FixedWindow})
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 8 - 3 + 8, held: []int64{7}, returned: []int64{3}, grants: []uint64{2}},
		},
		{
			// Fixed window, from 500 to 1000 minutes (T0's windows of both
			// start at the same instant): the 3 units left are dropped, and
			// stay counted: 8 + 8.
			name: "limit change/fixed window, another period", algs: []core.Algorithm{core.FixedWindow}, dynamic: true, instances: 1,
			limit: slow(100),
			run: func(s *scene) {
				s.call(0, 5)
				s.limit.Store(&core.Limit{Events: 100, Period: 1000 * time.Minute, Burst: 100, Algorithm: core.FixedWindow})
				s.call(0, 1)
			},
			want: want{decisions: []string{"aaaGLG"}, charged: 8 + 8, held: []int64{7}, returned: []int64{0}, grants: []uint64{2}},
		},
		{
			// A key refused locally under one limit (nothing was left when
			// it asked) asks Redis again at once under a larger one. (Not
			// the token bucket: its key keeps the tokens it has, none.)
			name: "limit change/after a refusal", algs: []core.Algorithm{core.GCRA, core.FixedWindow}, dynamic: true, instances: 1,
			limit: slow(6),
			run: func(s *scene) {
				s.call(0, 7)
				l := slow(20).WithAlgorithm(s.limit.Load().Algorithm)
				s.limit.Store(&l)
				s.call(0, 1)
			},
			// 3 cold; a lease of 3 (at most half the burst), spent; the
			// next call's grant is refused (nothing is left: the key would
			// wait for a unit here, a lease at most); then a lease of 10 (8
			// calls; half the new burst).
			want: want{decisions: []string{"aaaGLLxG"}, charged: 6 + 10, held: []int64{9}, returned: []int64{0}, grants: []uint64{3}},
		},
	} {
		for _, alg := range row.algs {
			t.Run(row.name+"/"+alg.String(), func(t *testing.T) {
				l := row.limit.WithAlgorithm(alg)
				s := &scene{t: t, c: c, r: newRig(t), got: make([]strings.Builder, row.instances)}
				s.limit.Store(&l)
				for range row.instances {
					var lim core.Limiter
					var err error
					if row.dynamic {
						lim, err = redisstore.NewDynamic(c, func(string) core.Limit { return *s.limit.Load() }, s.r.options(row.length, 4)...)
					} else {
						var one *redisstore.Limiter
						one, err = redisstore.New(c, l, s.r.options(row.length, 4)...)
						s.r.lims = append(s.r.lims, one)
						lim = one
					}
					if err != nil {
						t.Fatal(err)
					}
					s.r.all = append(s.r.all, lim)
				}
				row.run(s)
				s.r.settle()
				w := row.want
				for i := range row.instances {
					g, _, ret := redisstore.QuotaCounts(s.r.all[i])
					if got := s.got[i].String(); got != w.decisions[i] || g != w.grants[i] || ret != w.returned[i] || s.held(i) != w.held[i] {
						t.Errorf("instance %d: decisions %q, %d grants, %d units back, %d held; want %q, %d, %d, %d",
							i, got, g, ret, s.held(i), w.decisions[i], w.grants[i], w.returned[i], w.held[i])
					}
				}
				// left spends what is left: read it once.
				if charged := s.limit.Load().EffectiveBurst() - s.left(); charged != w.charged {
					t.Errorf("the key's state holds %d charged, want %d", charged, w.charged)
				}
			})
		}
	}
}
