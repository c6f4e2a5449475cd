package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
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

// lossyProxy forwards TCP connections on 127.0.0.1 to a Redis server and,
// while armed, loses the reply to a script (or to a pipeline of INCRBY,
// WithClientClockWindows's): it forwards the script, waits
// until the server has answered (so the script has run), then closes the
// client's connection instead of passing the answer on, as a network that
// drops a connection at the wrong moment would.
type lossyProxy struct {
	ln     net.Listener
	target string
	armed  atomic.Int32 // how many more script replies to lose
	lost   atomic.Int32 // how many were lost
	wg     sync.WaitGroup
}

func newLossyProxy(t *testing.T, target string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *lossyProxy) Addr() string { return p.ln.Addr().String() }

func (p *lossyProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Add(2)
		var drop atomic.Bool
		go p.up(c, s, &drop)
		go p.down(c, s, &drop)
	}
}

// up copies the client's bytes to the server and, while the proxy is
// armed, marks the connection whose next reply is lost when it carries a
// script.
func (p *lossyProxy) up(c, s net.Conn, drop *atomic.Bool) {
	defer p.wg.Done()
	defer s.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if low := bytes.ToLower(buf[:n]); (bytes.Contains(low, []byte("evalsha")) || bytes.Contains(low, []byte("fcall")) || bytes.Contains(low, []byte("incrby"))) && p.armed.Add(-1) >= 0 {
				drop.Store(true)
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// down copies the server's bytes to the client, but for a marked
// connection reads the server's answer and closes both ends instead.
func (p *lossyProxy) down(c, s net.Conn, drop *atomic.Bool) {
	defer p.wg.Done()
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && drop.Load() {
			// The server answered: the script ran. Give the server a moment
			// to answer a whole pipeline, then lose it all.
			_ = s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			for err == nil {
				_, err = s.Read(buf)
			}
			p.lost.Add(1)
			s.Close()
			return
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// windowCount reads the count a fixed window's state holds at rkey: 0 for
// no state.
func windowCount(t *testing.T, admin redis.UniversalClient, rkey string) int {
	t.Helper()
	v, err := admin.Get(context.Background(), rkey).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(v)
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("state %q at %s: %v", v, rkey, err)
	}
	return n
}

// TestReplyLostChargesOnce: a script whose reply is lost after it ran is
// not sent again, however many retries the client's options allow (a
// client's MaxRetries, a Cluster client's MaxRedirects), so the key is
// charged once; the call gets a store error for the failure mode to
// answer. Before scripts were marked not to be retried, go-redis sent the
// script again on a new connection and the key was charged twice.
func TestReplyLostChargesOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { admin.Close() })
	limit := core.PerMinute(100)
	clients := []struct {
		name string
		make func(addr string) redis.UniversalClient
	}{
		{"MaxRetries=0", func(addr string) redis.UniversalClient { // go-redis's default: 3 retries
			return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		}},
		{"MaxRetries=1", func(addr string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: 1})
		}},
		{"Cluster", func(addr string) redis.UniversalClient {
			// Every slot on the proxy, in front of a plain server: the
			// Cluster client's own retries (MaxRedirects) are what is tested.
			return redis.NewClusterClient(&redis.ClusterOptions{
				ContextTimeoutEnabled: true,
				ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
					return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: addr}}}}, nil
				},
			})
		}},
	}
	for i, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			proxy := newLossyProxy(t, srv.Addr())
			c := cl.make(proxy.Addr())
			t.Cleanup(func() { c.Close() })
			// A timeout well above the proxy's wait: the reply is lost to a
			// closed connection, not to the deadline.
			lim := redisstore.MustNew(c, limit.WithAlgorithm(core.FixedWindow),
				redisstore.WithTimeout(5*time.Second), redisstore.WithPrefix("loss"+strconv.Itoa(i)+":"))
			ctx := context.Background()
			if _, err := lim.Allow(ctx, "warm", 1); err != nil { // loads the script
				t.Fatal(err)
			}
			proxy.armed.Store(1)
			d, err := lim.Allow(ctx, "k", 1)
			if proxy.lost.Load() != 1 {
				t.Fatalf("the proxy lost %d replies, want 1", proxy.lost.Load())
			}
			if !errors.Is(err, core.ErrStore) {
				t.Errorf("Allow whose reply was lost = %+v, %v; want a store error", d, err)
			}
			if n := windowCount(t, admin, lim.Key("k")); n != 1 {
				t.Errorf("after one call whose reply was lost the key holds %d units, want 1 (charged once)", n)
			}
			// The limiter goes on deciding on a new connection.
			if d, err := lim.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Remaining != limit.Events-2 {
				t.Errorf("next Allow = %+v, %v; want admitted with %d left", d, err, limit.Events-2)
			}
		})
	}
}

// TestReplyLostPipelineChargesOnce: the same for calls that went together
// in one pipeline (batching): go-redis would resend the whole pipeline.
func TestReplyLostPipelineChargesOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { admin.Close() })
	proxy := newLossyProxy(t, srv.Addr())
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, PoolSize: 4})
	t.Cleanup(func() { c.Close() })
	lim := redisstore.MustNew(c, core.PerMinute(100).WithAlgorithm(core.FixedWindow),
		redisstore.WithTimeout(5*time.Second), redisstore.WithBatching(1, 64))
	ctx := context.Background()
	if _, err := lim.Allow(ctx, "warm", 1); err != nil {
		t.Fatal(err)
	}
	// Every script sent while armed loses its reply: the lone call and
	// each pipeline behind it.
	proxy.armed.Store(1 << 20)
	const calls = 32
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = lim.Allow(ctx, "k"+strconv.Itoa(i), 1)
		}()
	}
	wg.Wait()
	proxy.armed.Store(0)
	charged := 0
	for i := range calls {
		if errs[i] != nil && !errors.Is(errs[i], core.ErrStore) {
			t.Errorf("call %d: %v, want a store error or none", i, errs[i])
		}
		n := windowCount(t, admin, lim.Key("k"+strconv.Itoa(i)))
		if n > 1 {
			t.Errorf("key k%d holds %d units after one call, want at most 1", i, n)
		}
		charged += n
	}
	if proxy.lost.Load() == 0 || charged == 0 {
		t.Fatalf("the proxy lost %d replies and %d keys were charged; the test did not lose a reply after a script ran", proxy.lost.Load(), charged)
	}
}

// TestNewRefusesClientIgnoringDeadlines: a go-redis client that ignores
// context deadlines (ContextTimeoutEnabled false, go-redis's default)
// would hold each request for its ReadTimeout on a hung server, so New
// refuses it and says what to set; WithTimeout(0), which leaves the bound
// to the client, accepts it.
func TestNewRefusesClientIgnoringDeadlines(t *testing.T) {
	addr := "127.0.0.1:1" // never dialled: New does not contact the server
	clients := map[string]redis.UniversalClient{
		"Client":    redis.NewClient(&redis.Options{Addr: addr}),
		"Cluster":   redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}}),
		"Failover":  redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{addr}}),
		"Universal": redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{addr}}),
		"Ring":      redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr}}),
		"NoDeadlines": redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true,
			ReadTimeout: -2}),
	}
	for name, c := range clients {
		t.Cleanup(func() { c.Close() })
		t.Run(name, func(t *testing.T) {
			_, err := redisstore.New(c, core.PerMinute(10))
			if err == nil || !strings.HasPrefix(err.Error(), "redisstore: ") ||
				!strings.Contains(err.Error(), "ContextTimeoutEnabled") && !strings.Contains(err.Error(), "ReadTimeout") {
				t.Errorf("New = %v; want an error naming the option to set", err)
			}
			if _, err := redisstore.NewStack(c, []core.Limit{core.PerSecond(1), core.PerMinute(10)}); err == nil {
				t.Error("NewStack accepted the client")
			}
			if _, err := redisstore.New(c, core.PerMinute(10), redisstore.WithTimeout(0)); err != nil {
				t.Errorf("New with WithTimeout(0) = %v; want the client accepted", err)
			}
		})
	}
}

// TestHungServerREADMEClient: with the client the README shows (go-redis
// defaults but ContextTimeoutEnabled, whose ReadTimeout is seconds) and
// default options, a paused server costs a request the limiter's timeout,
// not the client's, directly and made WithFallback, alone or queued behind
// other callers.
func TestHungServerREADMEClient(t *testing.T) {
	t.Parallel()
	runAs(t, realTime)
	srv := redistest.Start(t)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { admin.Close() })
	limit := core.PerHour(20)
	lim := redisstore.MustNew(c, limit, redisstore.WithPrefix("a:"))
	fb := redisstore.MustNew(c, limit, redisstore.WithPrefix("b:"), redisstore.WithFallback())
	ctx := context.Background()
	for _, l := range []core.Limiter{lim, fb} {
		if d, err := l.Allow(ctx, "warm-up", 1); err != nil || !d.Allowed {
			t.Fatalf("before the pause: %+v %v", d, err)
		}
	}
	// Paused for longer than the bound below, which is three times the
	// default timeout (room for a busy machine): a call that waited for the
	// server, or for the client's own ReadTimeout (seconds), would pass it.
	// The test does not wait for the pause to end: the server is killed
	// when the test ends (a CLIENT UNPAUSE would itself wait out the pause).
	const pause = 4 * time.Second
	if err := admin.Do(ctx, "CLIENT", "PAUSE", strconv.Itoa(int(pause/time.Millisecond)), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	bound := 3 * redisstore.DefaultTimeout
	start := time.Now()
	d, err := lim.Allow(ctx, "k", 1)
	if took := time.Since(start); !errors.Is(err, core.ErrStore) || took > bound {
		t.Errorf("redisstore on a paused server: %+v, %v after %v; want a store error within %v", d, err, took, bound)
	}
	start = time.Now()
	d, err = fb.Allow(ctx, "k", 1)
	if took := time.Since(start); err != nil || !d.Allowed || took > bound {
		t.Errorf("fallback on a paused server: %+v, %v after %v; want a local admission within %v", d, err, took, bound)
	}
	// Many callers at once, most of them queued behind the round trips in
	// flight, with no breaker to turn them away and small batches, so that
	// the queue alone would hold the last for seconds: none waits longer
	// either.
	queued := redisstore.MustNew(c, limit, redisstore.WithPrefix("c:"), redisstore.WithBreaker(redisstore.BreakerConfig{}), redisstore.WithBatching(1, 4))
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			d, err := queued.Allow(ctx, "c"+strconv.Itoa(i), 1)
			if took := time.Since(start); !errors.Is(err, core.ErrStore) || took > bound {
				t.Errorf("caller %d on a paused server: %+v, %v after %v; want a store error within %v", i, d, err, took, bound)
			}
		}()
	}
	wg.Wait()
}
