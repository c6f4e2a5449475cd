package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestFaultKeysKeepTTLs: with the append-only file on, so that keys
// outlive a crash, goroutines deciding with every algorithm (admissions,
// refusals and refunds) while the server is killed and restarted leave no
// key without a TTL: not those restored from the file, not those written
// after. A key decided before the kill is there after the restart, so the
// scan covers restored keys.
func TestFaultKeysKeepTTLs(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t, redistest.WithPersistence())
	c := faultClient(t, srv.Addr())
	ctx := context.Background()
	var lims []*redisstore.Limiter
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow} {
		lims = append(lims, redisstore.MustNew(c, faultLimit.WithAlgorithm(alg), redisstore.WithTimeout(faultTimeout)))
	}
	for _, lim := range lims {
		if d, err := lim.Allow(ctx, "before", 1); err != nil || !d.Allowed {
			t.Fatalf("before the kill: %+v %v", d, err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 * len(lims) {
		lim := lims[g%len(lims)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", n%30) // each drained within the run
				var err error
				if n%7 == 6 {
					err = lim.Refund(ctx, key, 1)
				} else {
					_, err = lim.Allow(ctx, key, 1)
				}
				if err != nil && !errors.Is(err, core.ErrStore) {
					t.Errorf("%v", err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	srv.Kill()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	time.Sleep(700 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, lim := range lims {
		if ttl, err := c.PTTL(ctx, lim.Key("before")).Result(); err != nil || ttl <= 0 {
			t.Errorf("%s after the restart: PTTL %v %v; want the key restored, with its TTL", lim.Key("before"), ttl, err)
		}
	}
	checkTTLs(t, c)
}

// TestFaultClusterNodeDown: under load with FailOpen on a three-master
// Cluster, one master killed for a second and restarted: no 5xx; keys on
// the surviving masters are decided by Redis throughout, keys on the dead
// one fail open; once the cluster is whole again, Redis refuses a drained
// key on the restarted master within 5 s.
//
// The cluster runs with cluster-require-full-coverage no, as a rate
// limiter's cluster should: with the default (yes), once the others mark
// the dead master failed (after cluster-node-timeout, 2 s here) every node
// answers CLUSTERDOWN, and keys on surviving masters fail open too. The
// outage is shorter than the node timeout anyway, so the assertion on
// surviving keys does not depend on how fast the cluster notices.
func TestFaultClusterNodeDown(t *testing.T) {
	redistest.SkipShort(t, "Redis killed under load, and seconds waiting for it in real time")
	t.Parallel()
	cl := redistest.StartCluster(t, redistest.WithConfig("cluster-require-full-coverage no"))
	runAs(t, realTime) // once the Cluster, two seconds' wait, is up
	cc := redis.NewClusterClient(faultOptions(cl.Addrs()...).Cluster())
	t.Cleanup(func() { cc.Close() })
	lim := redisstore.MustNew(cc, faultLimit, redisstore.WithTimeout(faultTimeout))
	r := serve(t, lim, core.FailOpen)
	victim := cl.Nodes()[1]
	onVictim := func(key string) bool { return cl.NodeFor(lim.Key(key)) == victim }
	drainKey := ""
	for i := 0; drainKey == ""; i++ {
		if k := fmt.Sprintf("drained-after-%d", i); onVictim(k) {
			drainKey = k
		}
	}
	for _, addr := range cl.Addrs() { // every node's connection and script loaded
		for i := 0; ; i++ {
			if k := fmt.Sprintf("warm-%d", i); cl.NodeFor(lim.Key(k)).Addr() == addr {
				r.get(k)
				break
			}
		}
	}

	l := r.startLoad()
	time.Sleep(300 * time.Millisecond)
	r.set(phaseFaulting)
	victim.Kill()
	r.set(phaseDown)
	time.Sleep(time.Second)
	r.set(phaseRestarting)
	victim.Restart()
	cl.WaitOK()
	r.set(phaseBack)
	backAt := time.Now()
	drained := false
	for !drained && time.Since(backAt) < faultRecovery {
		if _, drained = r.drain(drainKey); !drained {
			time.Sleep(10 * time.Millisecond)
		}
	}
	took := time.Since(backAt)
	samples := l.finish()

	checkNoServerErrors(t, samples)
	var surviving, dead, slow, wrong int
	for _, s := range during(samples, phaseDown) {
		var ok bool
		switch {
		case onVictim(s.key):
			dead++
			ok = s.status == http.StatusOK && s.outcome == "store_error/admitted" && !s.decided
		case s.status == http.StatusOK && s.outcome == "store_error/admitted" && strings.Contains(s.cause, "deadline exceeded"):
			// A round trip to a live master slower than faultTimeout, on a
			// busy machine: counted, and bounded below.
			surviving++
			slow++
			ok = true
		default:
			surviving++
			ok = s.status == http.StatusOK && s.outcome == "allowed" && s.decided
		}
		if !ok {
			if wrong++; wrong <= 5 {
				t.Errorf("key on the dead master %v: %v; want it failed open there, decided by Redis elsewhere", onVictim(s.key), s)
			}
		}
	}
	t.Logf("while the master was down: %d requests for keys on surviving masters (%d timed out), %d on the dead one, %d answered otherwise", surviving, slow, dead, wrong)
	if slow > surviving/10 {
		t.Errorf("%d of %d requests for keys on surviving masters timed out; want them decided by Redis", slow, surviving)
	}
	if surviving < 20 || dead < 5 {
		t.Errorf("too few requests while the master was down: %d on surviving masters, %d on the dead one", surviving, dead)
	}
	checkLatency(t, "while a master was down", during(samples, phaseDown))
	if !drained {
		t.Errorf("no refusal by Redis for a key on the restarted master within %v of cluster_state:ok", faultRecovery)
	} else {
		t.Logf("Redis refused a drained key on the restarted master %v after cluster_state:ok", took.Round(time.Millisecond))
	}
}
