package overload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestAdaptivePriorities: under limit 20, a request of a rank (below
// Sheddable, Sheddable, Normal, Critical and above) is admitted while
// its rank and those above hold fewer than its threshold: 6 (1/3) below
// Sheddable, 13 (2/3) Sheddable, 20 Normal, 26 (4/3) Critical. Filling
// the service from the lowest class up, each higher class still gets
// its whole threshold, whatever the lower ones hold (they are not
// replaced as they end); filling it from the highest down, the lower
// classes get nothing. Refusals are counted by class.
func TestAdaptivePriorities(t *testing.T) {
	fill := func(a *Adaptive, p Priority) int {
		n := 0
		for {
			if _, ok := a.Acquire(p, 1); !ok {
				return n
			}
			n++
		}
	}
	up := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	for _, s := range []struct {
		p        Priority
		admitted int // admitted in a row, then refused
	}{
		{-128, 6}, {-2, 0}, {Sheddable, 13}, {Normal, 20}, {Critical, 26}, {127, 0},
	} {
		if n := fill(up.a, s.p); n != s.admitted {
			t.Fatalf("up, priority %d: %d admitted, want %d", s.p, n, s.admitted)
		}
	}
	if st := up.a.Stats(); st.InFlight != 65 || st.Shed != [3]int64{3, 1, 2} {
		t.Fatalf("up: stats %+v, want 65 in flight, shed [3 1 2]", st)
	}
	down := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	for _, s := range []struct {
		p        Priority
		admitted int
	}{
		{127, 26}, {Critical, 0}, {Normal, 0}, {Sheddable, 0}, {-128, 0},
	} {
		if n := fill(down.a, s.p); n != s.admitted {
			t.Fatalf("down, priority %d: %d admitted, want %d", s.p, n, s.admitted)
		}
	}
	if st := down.a.Stats(); st.InFlight != 26 || st.Shed != [3]int64{2, 1, 2} {
		t.Fatalf("down: stats %+v, want 26 in flight, shed [2 1 2]", st)
	}
}

// TestAdaptiveRefusal: a refusal is a shed, with the limit named
// "adaptive" as a valid core.Concurrency limit of the current size, and
// a RetryAfter of when the slots it lacks should free: lacking × latency
// / in flight (1 s for the latency before any is measured), at least
// 1 ms.
func TestAdaptiveRefusal(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	ctx := context.Background()
	var leases []core.Lease
	for range 20 {
		d, err := f.a.Allow(ctx, "k", 1)
		if err != nil || !d.Allowed || d.Lease.IsZero() {
			t.Fatalf("Allow = %+v, %v", d, err)
		}
		leases = append(leases, d.Lease)
	}
	d, err := f.a.Allow(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := core.Limit{Events: 20, Period: time.Second, Burst: 20, Name: "adaptive", Algorithm: core.Concurrency}
	if d.Allowed || !d.Shed || !d.Lease.IsZero() || d.Limit != want || d.Limit.Validate() != nil ||
		d.RetryAfter != time.Second/20 || d.ResetAfter != time.Second {
		t.Fatalf("refusal = %+v, want shed, limit %v, RetryAfter 50ms, ResetAfter 1s", d, want)
	}
	// A Critical request is admitted, the Normal ones not counting
	// against it: 25 more would be. One of cost 27 lacks 1+27−26 = 2
	// slots, which the one critical request in flight frees in 2 s.
	crit := NewContext(ctx, Critical)
	if d, _ := f.a.Allow(crit, "k", 1); !d.Allowed || d.Remaining != 25 {
		t.Fatalf("critical Allow = %+v, want admitted with 25 remaining", d)
	}
	if d, _ := f.a.Allow(crit, "k", 27); d.Allowed || d.RetryAfter != 2*time.Second {
		t.Fatalf("critical Allow of 27 = %+v, want RetryAfter 2s", d)
	}
	// Once a window has measured 1 ms: 2 lacking of 21 is 95 µs,
	// raised to the 1 ms floor.
	f.clk.Advance(time.Millisecond)
	for _, l := range leases[:16] {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 16 {
		f.a.Acquire(Critical, 1) // back to 21 in flight
	}
	if d, _ := f.a.Allow(ctx, "k", 1); d.RetryAfter != time.Millisecond || d.ResetAfter != time.Millisecond {
		t.Fatalf("refusal = %+v, want RetryAfter and ResetAfter 1ms", d)
	}
}

// TestAdaptiveLease: an admission's Lease ends once however often it is
// called, even once its record serves another admission; EndDone and EndDropped are counted in the window,
// EndIgnored gives the slot back unmeasured.
func TestAdaptiveLease(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	ctx := context.Background()
	allow := func() core.Lease {
		d, err := f.a.Allow(ctx, "", 1)
		if err != nil || !d.Allowed {
			t.Fatalf("Allow = %+v, %v", d, err)
		}
		return d.Lease
	}
	for _, how := range []core.Ending{core.EndDone, core.EndDropped, core.EndIgnored} {
		a, b := allow(), allow()
		for range 3 {
			if err := a.End(ctx, how); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.a.Stats().InFlight; got != 1 {
			t.Fatalf("after ending one of two leases (%d) thrice: %d in flight, want 1", how, got)
		}
		// c's record is a's, recycled (the pool hands back what this
		// goroutine put last, unless the race detector drops it): a's
		// stale End, or a copy's, must end nothing of c's.
		c, stale := allow(), a
		_, _ = a.End(ctx, how), stale.End(ctx, how)
		if got := f.a.Stats().InFlight; got != 2 {
			t.Fatalf("a stale lease ended again (%d): %d in flight, want 2", how, got)
		}
		_, _ = b.End(ctx, core.EndIgnored), c.End(ctx, core.EndIgnored)
	}
	if e := f.a.est; e.n != 1 || e.drops != 1 {
		t.Fatalf("window counted %d done, %d dropped; want 1, 1", e.n, e.drops)
	}
}

// TestAdaptiveExactAdmission: goroutines released together on a frozen
// clock are admitted exactly up to the limit, round after round, and
// every lease ended gives its slot back.
func TestAdaptiveExactAdmission(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 37})
	ctx := context.Background()
	for round := range 100 {
		gate := make(chan struct{})
		var mu sync.Mutex
		var leases []core.Lease
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				<-gate
				d, err := f.a.Allow(ctx, "k", 1)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					leases = append(leases, d.Lease)
					mu.Unlock()
				}
			})
		}
		close(gate)
		wg.Wait()
		if len(leases) != 37 {
			t.Fatalf("round %d: %d admitted, want exactly 37", round, len(leases))
		}
		for _, l := range leases {
			wg.Go(func() { _ = l.End(ctx, core.EndIgnored) })
		}
		wg.Wait()
		if got, tenants := f.a.Stats().InFlight, f.a.fair.active[rankNormal].Load(); got != 0 || tenants != 0 {
			t.Fatalf("round %d: %d in flight, %d tenants after every lease ended, want 0, 0", round, got, tenants)
		}
	}
}

// TestAdaptiveRefund: Refund gives slots back, never below none in
// flight; costs that can never be admitted are errors, as in Allow.
func TestAdaptiveRefund(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20, MaxLimit: 50})
	ctx := context.Background()
	if _, err := f.a.Allow(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	if err := f.a.Refund(ctx, "k", 2); err != nil || f.a.Stats().InFlight != 1 {
		t.Fatalf("Refund(2) = %v, %d in flight; want nil, 1", err, f.a.Stats().InFlight)
	}
	if err := f.a.Refund(ctx, "k", 5); err != nil || f.a.Stats().InFlight != 0 {
		t.Fatalf("Refund(5) = %v, %d in flight; want nil, 0", err, f.a.Stats().InFlight)
	}
	for _, cost := range []int{0, -1, 51} {
		_, err := f.a.Allow(ctx, "k", cost)
		rerr := f.a.Refund(ctx, "k", cost)
		if !errors.Is(err, core.ErrInvalidCost) || !errors.Is(rerr, core.ErrInvalidCost) {
			t.Fatalf("cost %d: Allow error %v, Refund error %v; want core.ErrInvalidCost", cost, err, rerr)
		}
		if _, ok := f.a.Acquire(Critical, cost); ok {
			t.Fatalf("Acquire(%d) admitted", cost)
		}
	}
	if _, err := f.a.Allow(ctx, "k", 51); !errors.Is(err, core.ErrCostTooLarge) {
		t.Fatalf("Allow(51) error %v, want core.ErrCostTooLarge", err)
	}
	// A cost within MaxLimit but above the limit is a shed: the limit may
	// grow to admit it.
	if d, err := f.a.Allow(ctx, "k", 30); err != nil || d.Allowed || !d.Shed {
		t.Fatalf("Allow(30) = %+v, %v; want shed", d, err)
	}
	var zero Token
	zero.End(core.EndDone) // holds nothing, does nothing
}

// TestAdaptiveConfig: the zero config is the defaults; each invalid
// setting is an error that names it.
func TestAdaptiveConfig(t *testing.T) {
	a, err := NewAdaptive(AdaptiveConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if e := a.est; a.limit.Load() != 2 || e.min != 2 || e.max != 1000 || e.tol != 1.1 {
		t.Fatalf("defaults: limit %d, %+v", a.limit.Load(), e)
	}
	if a, err := NewAdaptive(AdaptiveConfig{MinLimit: 30}); err != nil || a.limit.Load() != 30 {
		t.Fatalf("MinLimit 30: %v, initial limit %d; want 30", err, a.limit.Load())
	}
	if a, err := NewAdaptive(AdaptiveConfig{MaxLimit: 10}); err != nil || a.limit.Load() != 2 {
		t.Fatalf("MaxLimit 10: %v, initial limit %d; want 2", err, a.limit.Load())
	}
	if a, err := NewAdaptive(AdaptiveConfig{MaxLimit: 1}); err != nil || a.limit.Load() != 1 || a.est.min != 1 {
		t.Fatalf("MaxLimit 1: %v, initial limit %d; want 1, and a floor of 1", err, a.limit.Load())
	}
	for _, c := range []struct {
		cfg  AdaptiveConfig
		want string
	}{
		{AdaptiveConfig{MinLimit: -1}, "MinLimit"},
		{AdaptiveConfig{MinLimit: 10, MaxLimit: 5}, "MaxLimit"},
		{AdaptiveConfig{InitialLimit: 2000}, "InitialLimit"},
		{AdaptiveConfig{Tolerance: 1}, "Tolerance"},
	} {
		_, err := NewAdaptive(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "overload: "+c.want) {
			t.Errorf("NewAdaptive(%+v) = %v, want an error about %s", c.cfg, err, c.want)
		}
	}
}

// TestAdaptiveFairTracking: under limit 20, a tenant's requests are
// tracked from half the Normal threshold (10 held by Normal and above):
// a's first 9 are not (no entry, no tenant counted), its 10th and 11th
// are; ending an untracked request leaves the entry as it is, ending
// the tracked ones frees it. Critical requests are never tracked.
func TestAdaptiveFairTracking(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	tag := tagOf(f.a.fair.slotOf("a"), rankNormal)
	var toks []Token
	take := func(n int) {
		for range n {
			tok, ok := f.a.AcquireKey(Normal, "a", 1)
			if !ok {
				t.Fatal("refused")
			}
			toks = append(toks, tok)
		}
	}
	state := func() [2]int64 {
		_, held := f.a.fair.find(tag)
		return [2]int64{held, f.a.fair.active[rankNormal].Load()}
	}
	take(9)
	if got := state(); got != [2]int64{0, 0} {
		t.Fatalf("after 9: a's entry holds %d, %d tenants; want 0, 0", got[0], got[1])
	}
	take(2)
	if got := state(); got != [2]int64{2, 1} {
		t.Fatalf("after 11: a's entry holds %d, %d tenants; want 2, 1", got[0], got[1])
	}
	toks[0].End(core.EndIgnored)
	if got := state(); got != [2]int64{2, 1} {
		t.Fatalf("after an untracked end: %v, want [2 1]", got)
	}
	toks[9].End(core.EndIgnored)
	toks[10].End(core.EndIgnored)
	if got := state(); got != [2]int64{0, 0} {
		t.Fatalf("after the tracked ends: %v, want [0 0]", got)
	}
	for range 15 {
		f.a.AcquireKey(Critical, "a", 1)
	}
	if got := &f.a.fair.active; got[0].Load()+got[1].Load()+got[2].Load() != 0 {
		t.Fatal("critical requests tracked")
	}
}

// allowing returns a function that asks a for up to n cost-1 Normal
// requests of key, and reports how many were admitted before the first
// refusal, and that refusal.
func allowing(t *testing.T, a *Adaptive) func(key string, n int) (int, core.Decision) {
	return func(key string, n int) (admitted int, last core.Decision) {
		t.Helper()
		for range n {
			d, err := a.Allow(context.Background(), key, 1)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				return admitted, d
			}
			admitted++
		}
		return admitted, core.Decision{}
	}
}

// TestAdaptiveFairRoom: the tenants of a class share the room the
// classes above leave it. Under limit 20 with 10 Critical requests in
// flight, Normal's room is 10: tenant a holds 7 and b 1, so past 3/4 of
// the threshold a's share is ceil(10/2) = 5 (not ceil(20/2) = 10, which
// would let the tenant that floods take the critical requests' room
// from the others): a is refused, lacking 7 + 1 − 5 = 3 of its 7 (3/7
// of the 1 s latency assumed before any is measured), and b gets the
// last two slots. The critical requests, keyed a too, do not count
// against a's Normal share, and a's next critical one is admitted.
func TestAdaptiveFairRoom(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	ctx := context.Background()
	crit := NewContext(ctx, Critical)
	for range 10 {
		if d, _ := f.a.Allow(crit, "a", 1); !d.Allowed {
			t.Fatalf("critical: %+v, want admitted", d)
		}
	}
	allow := allowing(t, f.a)
	if n, _ := allow("a", 7); n != 7 {
		t.Fatalf("a: %d admitted, want 7", n)
	}
	if n, _ := allow("b", 1); n != 1 {
		t.Fatalf("b: %d admitted, want 1", n)
	}
	if n, d := allow("a", 1); n != 0 || !d.Shed || d.RetryAfter != 3*time.Second/7 {
		t.Fatalf("a's 8th: admitted %d, %+v; want shed, RetryAfter 3/7 s", n, d)
	}
	if n, _ := allow("b", 5); n != 2 {
		t.Fatalf("b: %d more admitted, want 2 (to the threshold, 20)", n)
	}
	if d, _ := f.a.Allow(crit, "a", 1); !d.Allowed {
		t.Fatalf("a's critical request: %+v, want admitted", d)
	}
	if got := f.a.fair.active[rankNormal].Load(); got != 2 {
		t.Fatalf("%d tenants in flight, want 2", got)
	}
}

// TestAdaptiveTenantTable: keys are told apart even when their entries'
// home is the same (slots hashed by key alone would have merged them
// into one share); a ninth key whose home entries are all taken is
// admitted by its threshold alone; an entry whose tenant holds nothing
// is free again.
func TestAdaptiveTenantTable(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 100})
	home := func(key string) uint64 { return tagOf(f.a.fair.slotOf(key), rankNormal) % tenantSlots }
	var keys []string
	for i := 0; len(keys) < tenantProbes+1; i++ {
		if k := fmt.Sprint("k", i); home(k) == home("k0") {
			keys = append(keys, k)
		}
	}
	for range 50 { // past half the Normal threshold: tenants are tracked
		f.a.Acquire(Critical, 1)
	}
	ctx := context.Background()
	var leases []core.Lease
	for i, k := range keys {
		d, err := f.a.Allow(ctx, k, 1)
		if err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", k, d, err)
		}
		leases = append(leases, d.Lease)
		want := int64(min(i+1, tenantProbes))
		if got := f.a.fair.active[rankNormal].Load(); got != want {
			t.Fatalf("after %d keys of one home: %d tenants tracked, want %d", i+1, got, want)
		}
	}
	for _, k := range keys[:tenantProbes] {
		if j, held := f.a.fair.find(tagOf(f.a.fair.slotOf(k), rankNormal)); j < 0 || held != 1 {
			t.Fatalf("%s: entry %d holds %d, want its own entry holding 1", k, j, held)
		}
	}
	for _, l := range leases {
		_ = l.End(ctx, core.EndIgnored)
	}
	if got := f.a.fair.active[rankNormal].Load(); got != 0 {
		t.Fatalf("%d tenants tracked after every lease ended, want 0", got)
	}
	last := keys[tenantProbes]
	if d, _ := f.a.Allow(ctx, last, 1); !d.Allowed {
		t.Fatalf("%s: %+v, want admitted", last, d)
	}
	if j, held := f.a.fair.find(tagOf(f.a.fair.slotOf(last), rankNormal)); j < 0 || held != 1 {
		t.Fatalf("%s: entry %d holds %d after the others ended, want an entry holding 1", last, j, held)
	}
}

// TestAdaptiveAcquireKey: AcquireKey shares the service between keys as
// Allow does (under limit 20 with 10 Critical requests in flight, a
// holds 7 and b 1: a's 8th is refused, b gets the last 2), and admits,
// ends and refuses with no allocation, over more keys than the tenant
// table holds.
func TestAdaptiveAcquireKey(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	for range 10 {
		f.a.Acquire(Critical, 1)
	}
	take := func(key string, n int) (admitted int) {
		for range n {
			if _, ok := f.a.AcquireKey(Normal, key, 1); !ok {
				break
			}
			admitted++
		}
		return admitted
	}
	if got := [4]int{take("a", 7), take("b", 1), take("a", 1), take("b", 5)}; got != [4]int{7, 1, 0, 2} {
		t.Fatalf("admitted %v, want [7 1 0 2]", got)
	}
	keys := make([]string, 2*tenantSlots)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	g := newFixture(t, AdaptiveConfig{InitialLimit: 1000, MinLimit: 1000})
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		tok, ok := g.a.AcquireKey(Normal, keys[i%len(keys)], 1)
		if !ok {
			t.Fatal("refused")
		}
		tok.End(core.EndDone)
		i++
	}); n != 0 {
		t.Fatalf("AcquireKey and End: %v allocations, want 0", n)
	}
	// Allow's Lease is a pooled record (the race detector drops some).
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		d, _ := g.a.Allow(ctx, keys[i%len(keys)], 1)
		if !d.Allowed {
			t.Fatal("refused")
		}
		_ = d.Lease.End(ctx, core.EndDone)
		i++
	}); n != 0 && !coretest.Race {
		t.Fatalf("Allow and Lease.End: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := f.a.AcquireKey(Normal, "a", 1); ok {
			t.Fatal("admitted")
		}
	}); n != 0 {
		t.Fatalf("a refusal: %v allocations, want 0", n)
	}
}

// TestAdaptiveCriticalDip: when the limit dips below the mean of the
// last 8 windows' limits, Critical requests are admitted under 4/3 of
// that mean rather than of the dipped limit, while Normal ones follow
// the limit in force.
func TestAdaptiveCriticalDip(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 20})
	var lims []int
	for range 10 {
		f.batch(minSamples, time.Millisecond, core.EndDone, 0, false)
		lims = append(lims, f.limit())
	}
	f.batch(20, time.Millisecond, core.EndDone, 20, false) // every one dropped, with over half the limit in flight
	lims = append(lims, f.limit())
	mean := 0
	for _, l := range lims[len(lims)-critWindows:] {
		mean += l
	}
	mean /= critWindows
	lim := lims[len(lims)-1]
	if lim >= mean {
		t.Fatalf("limits %v: no dip below the mean %d", lims, mean)
	}
	fill := func(p Priority) int {
		n := 0
		for {
			if _, ok := f.a.Acquire(p, 1); !ok {
				return n
			}
			n++
		}
	}
	normal := fill(Normal)
	crit := fill(Critical)
	t.Logf("limits %v: mean of the last %d %d; %d Normal then %d Critical admitted", lims, critWindows, mean, normal, crit)
	if normal != lim || crit != max(mean+1, mean*4/3) {
		t.Fatalf("%d Normal, %d Critical admitted; want %d (the limit), %d (4/3 of the mean %d)", normal, crit, lim, max(mean+1, mean*4/3), mean)
	}
}

// TestAdaptiveTenantTableConcurrent: goroutines admitting and ending
// requests of more keys than the table holds, past half the threshold
// (every one tracked or refused an entry), leave every entry free and
// no tenant counted once all have ended.
func TestAdaptiveTenantTableConcurrent(t *testing.T) {
	f := newFixture(t, AdaptiveConfig{InitialLimit: 1000, MinLimit: 1000})
	for range 600 {
		f.a.Acquire(Critical, 1)
	}
	keys := make([]string, 3*tenantSlots)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var held [4]Token
			for i := range 2000 {
				j := i % len(held)
				held[j].End(core.EndIgnored)
				tok, ok := f.a.AcquireKey(Normal, keys[(g*131+i*7)%len(keys)], 1+i%2)
				if !ok {
					t.Error("refused")
					return
				}
				held[j] = tok
			}
			for _, tok := range held {
				tok.End(core.EndIgnored)
			}
		})
	}
	wg.Wait()
	for i := range f.a.fair.tab {
		if w := f.a.fair.tab[i].Load(); w&heldMask != 0 {
			t.Fatalf("entry %d holds %d after every request ended", i, w&heldMask)
		}
	}
	if n, in := f.a.fair.active[rankNormal].Load(), f.a.Stats().InFlight; n != 0 || in != 600 {
		t.Fatalf("%d tenants counted, %d in flight; want 0, 600 (the critical ones)", n, in)
	}
}
