package redisstore_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

var (
	failoverFlag = flag.Bool("failover", false, "TestFailover: measure over-admission across Sentinel failovers (about 40 s, timing-dependent)")
	failoverLag  = flag.Duration("failoverlag", 300*time.Millisecond, "TestFailover: how far behind the replica is in its lag run")
)

// The failover test (issue 32): a master, a replica and a sentinel; six
// limits, each served by 4 instances (a Limiter with a failover client of
// its own) to 4 goroutines each, on 3 hot keys, each asked about 500
// times a second (2.5 to 10 times its limit). Mid-window the master is killed (SIGKILL);
// the sentinel promotes the replica and the instances go on. Every
// admission is logged with the wall clock before and after its call, and
// the logs give, per key, the admissions beyond the limit.
//
// A SIGKILL on one machine loses almost nothing: the master writes the
// replication stream in the same turn of its loop as the replies, and the
// kernel delivers what was written. To see what a lagging replica (a
// network, a busy replica, a dead machine) loses, the "lag" run points
// the replica at the master through a proxy that delivers the stream
// -failoverlag (300 ms) late and drops what it holds when the master dies:
// the new master misses the last 300 ms of writes.
const (
	failoverInstances = 4
	failoverRoutines  = 4
	failoverKeys      = 3
	failoverPace      = 10 * time.Millisecond   // per goroutine, between calls
	failoverBefore    = 1500 * time.Millisecond // load before the kill
	failoverAfter     = 5 * time.Second         // load after the new master answers
)

type failoverMode struct {
	name  string
	limit core.Limit
	quota bool
}

// failoverModes: a fixed window of 1 s, which a failover (the sentinel
// waits 1 s before it calls the master down) always outlasts; one of 10 s,
// within which the new master answers; and GCRA whose bucket takes 10 s to
// refill, longer than the outage, so that a lost count still matters
// after it. Each with every decision in Redis and with local quota.
func failoverModes() []failoverMode {
	fixed1 := core.Limit{Events: 200, Period: time.Second, Algorithm: core.FixedWindow}
	fixed10 := core.Limit{Events: 1000, Period: 10 * time.Second, Algorithm: core.FixedWindow}
	gcra := core.Limit{Events: 50, Period: time.Second, Burst: 500, Algorithm: core.GCRA}
	var modes []failoverMode
	for _, m := range []struct {
		name string
		l    core.Limit
	}{{"fixed1s", fixed1}, {"fixed10s", fixed10}, {"gcra", gcra}} {
		modes = append(modes, failoverMode{m.name + "/exact", m.l, false}, failoverMode{m.name + "/quota", m.l, true})
	}
	return modes
}

// TestFailover measures, for each mode and each key, the admissions beyond
// the limit across a failover, in bursts (over-admission ÷ burst): a fixed
// window's count over its limit (windows placed as checkFixedWindows
// places them); GCRA's count over the bound checkGCRAWindows checks, in
// windows of 1 s and of the whole run. It fails if a key exceeds one
// burst, with local quota or without: the new master holds some earlier
// state of each key, and no state holds more than a whole quota (a fixed
// window's count and a return are floored at 0, GCRA's state never before
// now), while every unit a lease spends was charged first. Opt-in, since
// it takes about 40 s and depends on timing:
//
//	go test ./redisstore -run '^TestFailover$' -failover -v
//
// and -failoverlag 1.5s puts the replica behind by every write of the
// 10 s window before the kill, the worst case.
func TestFailover(t *testing.T) {
	if !*failoverFlag {
		t.Skip("measures Sentinel failovers in real time, for about 40 s: run with -failover")
	}
	for _, lag := range []time.Duration{0, *failoverLag} {
		name := "kill"
		if lag > 0 {
			name = "lag"
		}
		t.Run(name, func(t *testing.T) { runFailover(t, lag) })
	}
}

// failoverLimiter is one instance of a mode.
type failoverLimiter struct {
	lim *redisstore.Limiter
	log [failoverRoutines][]fleetAdm
}

func runFailover(t *testing.T, lag time.Duration) {
	g := redistest.StartSentinel(t)
	modes := failoverModes()
	lims := make([][failoverInstances]*failoverLimiter, len(modes))
	for m, mode := range modes {
		for i := range failoverInstances {
			c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName(), SentinelAddrs: g.SentinelAddrs(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { c.Close() })
			opts := []redisstore.Option{redisstore.WithPrefix(fmt.Sprintf("fo%d:", m))}
			if mode.quota {
				opts = append(opts, redisstore.WithLocalQuota(redisstore.LocalQuota{}))
			}
			lim, err := redisstore.New(c, mode.limit, opts...)
			if err != nil {
				t.Fatal(err)
			}
			lims[m][i] = &failoverLimiter{lim: lim}
		}
	}
	direct := redis.NewClient(&redis.Options{Addr: g.Master().Addr(), ContextTimeoutEnabled: true})
	defer direct.Close()
	checkServerClock(t, direct)
	replica := redis.NewClient(&redis.Options{Addr: g.Replica().Addr(), ContextTimeoutEnabled: true})
	defer replica.Close()
	if lag > 0 {
		viaProxy(t, g, lag)
	}

	// The kill falls 1.5 s into a 10 s window: the 10 s window is then
	// charged but not full, and the new master answers within it.
	const P = int64(10 * time.Second)
	now := time.Now().UnixNano()
	kill := (now+int64(100*time.Millisecond)+P-1)/P*P + int64(failoverBefore)
	start := kill - int64(failoverBefore)
	time.Sleep(time.Until(time.Unix(0, start)))

	var stop atomic.Bool
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true) // on a t.Fatal too
	for m := range modes {
		for _, fl := range lims[m] {
			for r := range failoverRoutines {
				wg.Go(func() {
					for n := r; !stop.Load(); n++ {
						k := n % failoverKeys
						s := time.Now().UnixNano()
						d, err := fl.lim.Allow(context.Background(), fmt.Sprint("k", k), 1)
						after := time.Now().UnixNano()
						calls.Add(1)
						switch {
						case err != nil:
							failed.Add(1)
						case d.Allowed:
							fl.log[r] = append(fl.log[r], fleetAdm{key: k, s: s, r: after, reset: int64(d.ResetAfter)})
						}
						time.Sleep(failoverPace)
					}
				})
			}
		}
	}

	samples := sampleOffsets(t, direct)
	time.Sleep(time.Until(time.Unix(0, kill)))
	lost, lostFor := samples.behind(t, replica)
	old := g.KillMaster()
	killedAt := time.Now().UnixNano()
	g.WaitForFailover(old)
	promoted := time.Now().UnixNano()
	time.Sleep(failoverAfter)
	stop.Store(true)
	wg.Wait()
	end := time.Now().UnixNano()

	n, e := calls.Load(), failed.Load()
	t.Logf("%d calls (%.0f a second), %d failed; the master killed at %v, the new master answering %v later; the replica was %d bytes (%v) behind",
		n, float64(n)/time.Duration(end-start).Seconds(), e, time.Duration(killedAt-start), time.Duration(promoted-killedAt), lost, lostFor)
	for m, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			var length int64
			if mode.quota {
				length = int64(min(mode.limit.Period/10, time.Second))
			}
			worst := measureFailover(t, mode.limit, lims[m], length, killedAt, end-start)
			if worst > 1 {
				t.Errorf("%s: %.3f bursts admitted beyond the limit across the failover, want at most one", mode.name, worst)
			}
		})
	}
}

// lagProxy carries the replication stream from the master to the replica
// lag late, as a slow network or a busy replica would: what it holds when
// the master dies is lost, as it would be if the master's machine died.
type lagProxy struct {
	ln     net.Listener
	master string
	lag    time.Duration
	wg     sync.WaitGroup
}

func startLagProxy(t *testing.T, master string, lag time.Duration) *lagProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lagProxy{ln: ln, master: master, lag: lag}
	p.wg.Go(p.serve)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *lagProxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.carry(down) })
	}
}

// carry passes the replica's commands at once and the master's stream lag
// late; once the master's side ends, what is still held is dropped.
func (p *lagProxy) carry(down net.Conn) {
	defer down.Close()
	up, err := net.Dial("tcp", p.master)
	if err != nil {
		return
	}
	defer up.Close()
	go io.Copy(up, down) // ends when either side closes
	type chunk struct {
		due  time.Time
		data []byte
	}
	held := make(chan chunk, 1<<16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range held {
			time.Sleep(time.Until(c.due)) // the lag: at most p.lag
			if _, err := down.Write(c.data); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			held <- chunk{time.Now().Add(p.lag), slices.Clone(buf[:n])}
		}
		if err != nil {
			break
		}
	}
	down.Close() // the master is gone: what it sent and the replica has not got is lost
	close(held)
	<-done
}

// viaProxy points the replica at the master through a lagProxy, and waits
// until its link is up again.
func viaProxy(t *testing.T, g *redistest.Sentinel, lag time.Duration) {
	t.Helper()
	p := startLagProxy(t, g.Master().Addr(), lag)
	r := redis.NewClient(&redis.Options{Addr: g.Replica().Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	if err := r.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's link through the proxy is not up within 10 s: %v\n%s", err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// offsets samples the master's replication offset every 20 ms, so that
// the replica's offset at the kill tells how far behind it was, in time.
type offsets struct {
	mu      sync.Mutex
	at, off []int64
	stop    chan struct{}
	done    sync.WaitGroup
}

func sampleOffsets(t *testing.T, master *redis.Client) *offsets {
	o := &offsets{stop: make(chan struct{})}
	o.done.Go(func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			if info, err := master.Info(context.Background(), "replication").Result(); err == nil {
				at := time.Now().UnixNano()
				o.mu.Lock()
				o.at, o.off = append(o.at, at), append(o.off, redistest.ParseInfo(info).Int(t, "master_repl_offset"))
				o.mu.Unlock()
			}
			select {
			case <-tk.C:
			case <-o.stop:
				return
			}
		}
	})
	return o
}

// behind stops the sampling and returns how far the replica's offset is
// behind the master's last sample, in bytes and in time (to the
// sampling's 20 ms; the master's writes after its last sample, as the
// replica's after it, are not counted).
func (o *offsets) behind(t *testing.T, replica *redis.Client) (int64, time.Duration) {
	t.Helper()
	close(o.stop)
	o.done.Wait()
	info, err := replica.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	r := redistest.ParseInfo(info).Int(t, "slave_repl_offset")
	last := len(o.off) - 1
	i, _ := slices.BinarySearch(o.off, r)
	if last < 0 || i > last {
		return 0, 0
	}
	return o.off[last] - r, time.Duration(o.at[last] - o.at[i])
}

// measureFailover logs, for each key, the worst admissions beyond the
// limit (a negative figure is room left under it), before the kill and
// over the whole run, and returns the worst over the run in bursts.
func measureFailover(t *testing.T, l core.Limit, lims [failoverInstances]*failoverLimiter, length, killedAt, run int64) float64 {
	t.Helper()
	burst := float64(l.EffectiveBurst())
	worst := math.Inf(-1)
	for k := range failoverKeys {
		var adm []fleetAdm
		for _, fl := range lims {
			for _, log := range fl.log {
				for _, a := range log {
					if a.key == k {
						adm = append(adm, a)
					}
				}
			}
		}
		slices.SortFunc(adm, func(a, b fleetAdm) int { return int(a.r - b.r) })
		cut, _ := slices.BinarySearchFunc(adm, killedAt, func(a fleetAdm, x int64) int { return int(a.r - x) })
		if len(adm) == 0 || cut == 0 {
			t.Fatalf("key %d: %d admissions, %d before the kill", k, len(adm), cut)
		}
		if l.Algorithm == core.FixedWindow {
			before, counts := fixedOver(adm[:cut], l), ""
			over := fixedOver(adm, l)
			for _, c := range fixedCounts(adm, l) {
				counts += fmt.Sprint(" ", c)
			}
			t.Logf("key %d: admitted per window%s (limit %d); beyond the limit: %d before the kill, %d over the run (%.3f bursts)", k, counts, l.Events, before, over, float64(over)/burst)
			worst = max(worst, float64(over)/burst)
			continue
		}
		var line string
		for _, T := range []int64{int64(time.Second), run + int64(time.Second)} {
			before, over := gcraOver(adm[:cut], l, length, T), gcraOver(adm, l, length, T)
			line += fmt.Sprintf("; windows of %v: %.1f before the kill, %.1f over the run (%.3f bursts)", time.Duration(T).Round(time.Second), before, over, over/burst)
			worst = max(worst, over/burst)
		}
		t.Logf("key %d: %d admitted; beyond the bound%s", k, len(adm), line)
	}
	t.Logf("worst: %.3f bursts beyond the limit", worst)
	return worst
}

// fixedCounts places adm in its windows as checkFixedWindows does, and
// returns the count of each window, in order.
func fixedCounts(adm []fleetAdm, l core.Limit) []int {
	P := int64(l.Period)
	placed := map[int64]int{}
	for _, a := range adm {
		placed[(a.s+a.reset+P-1)/P-1]++
	}
	var counts []int
	for _, w := range slices.Sorted(func(yield func(int64) bool) {
		for w := range placed {
			if !yield(w) {
				return
			}
		}
	}) {
		counts = append(counts, placed[w])
	}
	return counts
}

// fixedOver is the most a window admitted beyond the limit (negative:
// room left in the fullest).
func fixedOver(adm []fleetAdm, l core.Limit) int {
	return slices.Max(fixedCounts(adm, l)) - l.Events
}

// gcraOver is the most the admissions of a window of length T (starting
// or ending at one of them) exceed the bound checkGCRAWindows checks.
func gcraOver(adm []fleetAdm, l core.Limit, length, T int64) float64 {
	minS := newMinTable(adm)
	rate := float64(l.Events) / float64(l.Period)
	worst := math.Inf(-1)
	check := func(i, j int) {
		bound := float64(l.EffectiveBurst()) + rate*float64(adm[j].r-minS.min(i, j)+length)
		worst = max(worst, float64(j-i+1)-bound)
	}
	j := 0
	for i := range adm {
		for j+1 < len(adm) && adm[j+1].r <= adm[i].r+T {
			j++
		}
		check(i, j)
	}
	i := 0
	for j := range adm {
		for adm[i].r < adm[j].r-T {
			i++
		}
		check(i, j)
	}
	return worst
}

// TestFailoverMeasures checks the measures TestFailover reports, on logs
// made up here.
func TestFailoverMeasures(t *testing.T) {
	t.Parallel()
	sec := int64(time.Second)
	fixed := core.Limit{Events: 3, Period: time.Second, Algorithm: core.FixedWindow}
	// at places an admission at x ns, its call taking no time, in the
	// window of the same second (ResetAfter to that window's end).
	at := func(xs ...int64) []fleetAdm {
		var adm []fleetAdm
		for _, x := range xs {
			adm = append(adm, fleetAdm{s: x, r: x, reset: (x/sec+1)*sec - x})
		}
		return adm
	}
	t.Run("fixed", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			adm  []fleetAdm
			want int
		}{
			{"under", at(0, 1, sec+1), -1},
			{"full", at(0, 1, 2, sec, sec+1), 0},
			{"two over in the second window", at(0, sec, sec+1, sec+2, sec+3, sec+4), 2},
			// A call across the turn counts in the window its decision
			// names (ResetAfter), the second here.
			{"a call across the turn", append(at(0, 1, 2, sec), fleetAdm{s: sec - 1, r: sec + 1, reset: sec + 1}), 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := fixedOver(tc.adm, fixed); got != tc.want {
					t.Errorf("fixedOver = %d, want %d (windows %v)", got, tc.want, fixedCounts(tc.adm, fixed))
				}
			})
		}
	})
	t.Run("gcra", func(t *testing.T) {
		gcra := core.Limit{Events: 1, Period: time.Second, Burst: 2, Algorithm: core.GCRA}
		for _, tc := range []struct {
			name   string
			adm    []fleetAdm
			length int64
			T      int64
			want   float64
		}{
			// The burst at once, then one a second: on the bound.
			{"on the bound", at(0, 0, sec, 2*sec), 0, 3 * sec, 0},
			// Three at once against a burst of 2.
			{"one over", at(0, 0, 0, sec), 0, sec, 1},
			// A lease of half a second allows half a unit more.
			{"one over, a lease", at(0, 0, 0, sec), sec / 2, sec, 0.5},
			// Windows of 1 s do not see the run's excess: 2 + 1 a second
			// over 3 s allows 5, and 6 came; any 1 s allows 3.
			{"over the run only", at(0, 0, sec, 2*sec, 3*sec-1, 3*sec), 0, sec, 0},
			{"over the run", at(0, 0, sec, 2*sec, 3*sec-1, 3*sec), 0, 4 * sec, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if got := gcraOver(tc.adm, gcra, tc.length, tc.T); math.Abs(got-tc.want) > 1e-9 {
					t.Errorf("gcraOver = %v, want %v", got, tc.want)
				}
			})
		}
	})
}
