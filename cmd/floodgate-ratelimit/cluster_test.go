package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// abcRules limits three descriptors, a, b and c, to 2, 3 and 5 a minute
// (fixed windows, the default).
const abcRules = `domain: d
descriptors:
  - key: a
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: b
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: c
    rate_limit:
      unit: minute
      requests_per_unit: 5
`

// stateKey returns the start of the Redis key that holds descriptor k=v's
// state, as the service names it: redisstore's default prefix, then the
// rule's key (rlsconfig's Rule.Key) as the hash tag. The end of the key
// names the algorithm and the limit.
func stateKey(t *testing.T, k, v string) string {
	t.Helper()
	d, err := rlsconfig.Parse("d.yaml", []byte(abcRules))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	entries := []rlsconfig.Entry{{Key: k, Value: v}}
	r := c.Match("d", entries)
	if r == nil {
		t.Fatalf("no rule for %s=%s", k, v)
	}
	return "floodgate:{" + r.Key(entries) + "}"
}

// state is a descriptor's Redis key as one server holds it.
type state struct {
	key, value string
	ttl        time.Duration
}

// stateOf returns descriptor k=v's state on c, which must hold exactly
// one key for it; present is false when it holds none.
func stateOf(t *testing.T, c *redis.Client, k, v string) (st state, present bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := c.Keys(ctx, stateKey(t, k, v)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	switch len(keys) {
	case 0:
		return state{}, false
	case 1:
	default:
		t.Fatalf("%s=%s: %d keys on %s, want one: %v", k, v, len(keys), c.Options().Addr, keys)
	}
	st.key = keys[0]
	if st.value, err = c.Get(ctx, st.key).Result(); err != nil {
		t.Fatal(err)
	}
	if st.ttl, err = c.PTTL(ctx, st.key).Result(); err != nil {
		t.Fatal(err)
	}
	if st.ttl <= 0 {
		t.Fatalf("%s: PTTL %v, want a TTL", st.key, st.ttl)
	}
	return st, true
}

// nodeClient is a client of one server, closed when t ends.
func nodeClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// minute returns the number of the minute the server's clock is in: a
// fixed window of a minute starts at each.
func minute(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.Unix() / 60
}

// codes returns the response's overall code and its statuses' codes and
// limit_remaining, as "OVER_LIMIT: OK 1, OK 2, OVER_LIMIT 0".
func codes(r *rlsv3.RateLimitResponse) string {
	parts := make([]string, len(r.GetStatuses()))
	for i, st := range r.GetStatuses() {
		parts[i] = fmt.Sprintf("%s %d", st.GetCode(), st.GetLimitRemaining())
	}
	return r.GetOverallCode().String() + ": " + strings.Join(parts, ", ")
}

// allOrNothing checks, on fresh values va, vb and vc of a, b and c whose
// states the clients ca, cb and cc hold, that a request of the three is
// decided all or nothing: the third, which a (2 a minute) refuses, leaves
// b's and c's counts and TTLs as they were, and later requests find them
// so. It reports false, having checked nothing for sure, when a minute
// began during the checks (every count starts again).
func allOrNothing(t *testing.T, s *service, ca, cb, cc *redis.Client, va, vb, vc string) bool {
	t.Helper()
	m := minute(t, ca)
	abc := func() string {
		return codes(s.ask("d", 0, desc("a="+va), desc("b="+vb), desc("c="+vc)))
	}
	var failures []string
	check := func(what, got, want string) {
		if got != want {
			failures = append(failures, fmt.Sprintf("%s: %s, want %s", what, got, want))
		}
	}
	check("request 1", abc(), "OK: OK 1, OK 2, OK 4")
	check("request 2", abc(), "OK: OK 0, OK 1, OK 3")
	before := map[string]state{}
	for _, x := range []struct {
		c    *redis.Client
		k, v string
	}{{ca, "a", va}, {cb, "b", vb}, {cc, "c", vc}} {
		st, ok := stateOf(t, x.c, x.k, x.v)
		if !ok {
			failures = append(failures, fmt.Sprintf("%s=%s: no state on %s, which holds its slot", x.k, x.v, x.c.Options().Addr))
		}
		before[x.k] = st
	}
	// Refused by a: b and c report what they had, and keep it.
	check("request 3", abc(), "OVER_LIMIT: OVER_LIMIT 0, OK 1, OK 3")
	for k, c := range map[string]*redis.Client{"a": ca, "b": cb, "c": cc} {
		v := map[string]string{"a": va, "b": vb, "c": vc}[k]
		after, _ := stateOf(t, c, k, v)
		b := before[k]
		if after.key != b.key || after.value != b.value || after.ttl > b.ttl {
			failures = append(failures, fmt.Sprintf("%s=%s after the refused request: %q TTL %v, before %q TTL %v", k, v, after.value, after.ttl, b.value, b.ttl))
		}
	}
	check("b and c", codes(s.ask("d", 0, desc("b="+vb), desc("c="+vc))), "OK: OK 0, OK 2")
	check("b alone", codes(s.ask("d", 0, desc("b="+vb))), "OVER_LIMIT: OVER_LIMIT 0")
	check("c alone", codes(s.ask("d", 0, desc("c="+vc))), "OK: OK 1")
	if minute(t, ca) != m {
		return false
	}
	for _, f := range failures {
		t.Error(f)
	}
	if len(failures) > 0 {
		t.FailNow()
	}
	return true
}

// load runs 8 callers asking for the descriptors made by ds until the
// returned function is called, which returns how many calls failed (a
// gRPC error; a refusal is an answer).
func load(s *service, ds func() []*rlcommon.RateLimitDescriptor) (stop func() int64) {
	var failed atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds()}
			for !done.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := s.rls.ShouldRateLimit(ctx, req)
				cancel()
				if err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	return func() int64 {
		done.Store(true)
		wg.Wait()
		return failed.Load()
	}
}

// TestCluster runs the service on a three-master Redis Cluster, with a
// request's descriptors on different masters: decisions all or nothing
// across the slots; then one master is killed under load: no call fails,
// descriptors on the dead master are answered by the failure mode, those
// on the others by Redis, and a request that spans both charges nothing.
//
// The cluster runs with cluster-require-full-coverage no, as a rate
// limiter's should (see redisstore's TestFaultClusterNodeDown): with the
// default, every node answers CLUSTERDOWN once the dead master is marked
// failed, and every descriptor is answered by the failure mode.
func TestCluster(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"closed", "open"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cl := redistest.StartCluster(t, redistest.WithConfig("cluster-require-full-coverage no"))
			nodes := cl.Nodes()
			clients := make([]*redis.Client, len(nodes))
			for i, n := range nodes {
				clients[i] = nodeClient(t, n.Addr())
			}
			// on returns a value of k not used before whose state the
			// i-th master holds.
			n := 0
			on := func(k string, i int) string {
				for ; ; n++ {
					if v := fmt.Sprintf("v%d", n); cl.NodeFor(stateKey(t, k, v)) == nodes[i] {
						n++
						return v
					}
				}
			}
			dir := t.TempDir()
			write(t, dir, "d.yaml", abcRules)
			s := start(t, "-config", dir, "-redis", strings.Join(cl.Addrs(), ","), "-failure", mode)

			// The keys are where the slots say, and only there.
			va, vb, vc := on("a", 0), on("b", 1), on("c", 2)
			s.ask("d", 0, desc("a="+va), desc("b="+vb), desc("c="+vc)) // loads the library on each master
			for i, kv := range [][2]string{{"a", va}, {"b", vb}, {"c", vc}} {
				for j, c := range clients {
					if _, ok := stateOf(t, c, kv[0], kv[1]); ok != (i == j) {
						t.Fatalf("%s=%s: a key on master %d: %v, want the key on master %d alone", kv[0], kv[1], j, ok, i)
					}
				}
			}
			// A minute may begin during the checks once, not twice.
			if !allOrNothing(t, s, clients[0], clients[1], clients[2], on("a", 0), on("b", 1), on("c", 2)) &&
				!allOrNothing(t, s, clients[0], clients[1], clients[2], on("a", 0), on("b", 1), on("c", 2)) {
				t.Fatal("two minutes began during the checks")
			}

			// Kill c's master under load.
			spent := on("a", 0)
			for range 2 {
				s.ask("d", 0, desc("a="+spent))
			}
			la, lb, lc := on("a", 0), on("b", 1), on("c", 2)
			stop := load(s, func() []*rlcommon.RateLimitDescriptor {
				return []*rlcommon.RateLimitDescriptor{desc("a=" + la), desc("b=" + lb), desc("c=" + lc)}
			})
			time.Sleep(50 * time.Millisecond) // bounded: let the load reach Redis before the kill
			nodes[2].Kill()
			// a's master is decided by Redis once the service has let go
			// of the dead one: a fresh value admitted (fail closed would
			// refuse it), a spent one refused (fail open would admit it).
			waitFor(t, "a decided by Redis after the kill", func() bool {
				if mode == "closed" {
					return s.ask("d", 0, desc("a="+on("a", 0))).GetOverallCode() == rlsv3.RateLimitResponse_OK
				}
				return s.ask("d", 0, desc("a="+spent)).GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT
			})
			if failed := stop(); failed > 0 {
				t.Fatalf("%d calls failed while a master died", failed)
			}
			want := map[string]string{"closed": "OVER_LIMIT", "open": "OK"}[mode]
			for i := range 20 {
				if got := s.ask("d", 0, desc("c="+on("c", 2))).GetOverallCode().String(); got != want {
					t.Fatalf("call %d on the dead master: %s, want %s", i, got, want)
				}
			}
			// A request across the live masters and the dead one follows
			// the failure mode. Failing closed it charges the live ones
			// nothing; failing open it is decided again one descriptor at
			// a time, so that the live ones are counted.
			fa, fb := on("a", 0), on("b", 1)
			if got := s.ask("d", 0, desc("a="+fa), desc("b="+fb), desc("c="+on("c", 2))).GetOverallCode().String(); got != want {
				t.Fatalf("a request across the masters: %s, want %s", got, want)
			}
			after := map[string]string{"closed": "OK: OK 1, OK 2", "open": "OK: OK 0, OK 1"}[mode]
			if got := codes(s.ask("d", 0, desc("a="+fa), desc("b="+fb))); got != after {
				t.Fatalf("a and b after the request across the masters: %s, want %s", got, after)
			}
			if m := get(t, "http://"+s.addrs.http+"/metrics"); !strings.Contains(m, `outcome="store_error"`) {
				t.Fatalf("store errors not in the metrics:\n%s", m)
			}
		})
	}
}

// TestSentinel runs the service on Sentinel (-redis naming the sentinel,
// -redis-master the master): decisions all or nothing, the state on the
// master; then the master is killed under load and the replica promoted:
// no call fails, and the service decides on the new master.
func TestSentinel(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinel(t)
	dir := t.TempDir()
	write(t, dir, "d.yaml", abcRules)
	s := start(t, "-config", dir, "-redis", strings.Join(g.SentinelAddrs(), ","), "-redis-master", g.MasterName(), "-failure", "closed")
	mc := nodeClient(t, g.MasterAddr())
	n := 0
	fresh := func() string { n++; return fmt.Sprintf("v%d", n) }
	if !allOrNothing(t, s, mc, mc, mc, fresh(), fresh(), fresh()) && !allOrNothing(t, s, mc, mc, mc, fresh(), fresh(), fresh()) {
		t.Fatal("two minutes began during the checks")
	}

	la, lb, lc := fresh(), fresh(), fresh()
	stop := load(s, func() []*rlcommon.RateLimitDescriptor {
		return []*rlcommon.RateLimitDescriptor{desc("a=" + la), desc("b=" + lb), desc("c=" + lc)}
	})
	time.Sleep(50 * time.Millisecond) // bounded: let the load reach Redis before the kill
	old := g.KillMaster()
	addr := g.WaitForFailover(old)
	// Fail closed: a fresh value admitted is a decision of the new master.
	// 30 s bounds the client's switch to it and the breaker's reopening
	// (4 s at most), with room for a loaded machine.
	waitFor(t, "a decision after the failover", func() bool {
		return s.ask("d", 0, desc("a="+fresh())).GetOverallCode() == rlsv3.RateLimitResponse_OK
	})
	if failed := stop(); failed > 0 {
		t.Fatalf("%d calls failed during the failover", failed)
	}
	v := fresh()
	for i, want := range []string{"OK: OK 1", "OK: OK 0", "OVER_LIMIT: OVER_LIMIT 0"} {
		if got := codes(s.ask("d", 0, desc("a="+v))); got != want {
			t.Fatalf("call %d after the failover: %s, want %s", i, got, want)
		}
	}
	if _, ok := stateOf(t, nodeClient(t, addr), "a", v); !ok {
		t.Fatalf("a=%s: no state on the new master %s", v, addr)
	}
}
