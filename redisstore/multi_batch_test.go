package redisstore_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// TestMultiBatching: a Multi's calls on one server share round trips as a
// Limiter's do: with one round trip in flight, the calls that arrive
// meanwhile wait and go together, in pipelines of at most the batch size,
// one script per call, each decided all or nothing as if alone (a call
// refused in a batch charges none of its items), and a lone call is sent
// at once, alone.
func TestMultiBatching(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	h := newHolder()
	c.AddHook(h)
	m, err := redisstore.NewMulti(c, redisstore.WithBatching(1, 4), redisstore.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hour, one := []core.Limit{core.PerHour(1000)}, []core.Limit{core.PerHour(1)}
	if _, err := m.Allow(ctx, []redisstore.Item{{Key: "spent", Limits: one, Cost: 1}}); err != nil {
		t.Fatal(err)
	}
	call := func(items []redisstore.Item) chan multiResult {
		out := make(chan multiResult, 1)
		go func() {
			ds, err := m.Allow(ctx, items)
			out <- multiResult{ds, err}
		}()
		return out
	}
	three := []redisstore.Item{{Key: "a", Limits: hour, Cost: 1}, {Key: "b", Limits: hour, Cost: 2}, {Key: "c", Limits: hour, Cost: 1}}

	h.cmd.arm()
	lone := call(three)
	<-h.cmd.entered
	var queued []chan multiResult
	for i := range 10 {
		items := three
		if i == 4 { // refused by "spent": a, b and c keep their units
			items = append(slices.Clone(three), redisstore.Item{Key: "spent", Limits: one, Cost: 1})
		}
		queued = append(queued, call(items))
		for deadline := time.Now().Add(10 * time.Second); redisstore.Waiting(redisstore.LimiterOf(m)) < i+1; {
			if time.Now().After(deadline) {
				t.Fatalf("%d calls wait, want %d", redisstore.Waiting(redisstore.LimiterOf(m)), i+1)
			}
			runtime.Gosched()
		}
	}
	close(h.cmd.release)
	if r := <-lone; r.err != nil || !r.ds[0].Allowed || r.ds[0].Remaining != 999 || r.ds[1].Remaining != 998 {
		t.Fatalf("the lone call: %+v, %v", r.ds, r.err)
	}
	var left []int
	refused := 0
	for _, ch := range queued {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.ds) == 4 {
				if r.ds[3].Allowed {
					t.Fatalf("the call with a spent key: %+v, want it refused", r.ds)
				}
				refused++
				continue
			}
			for _, d := range r.ds {
				if !d.Allowed {
					t.Fatalf("a batched call: %+v", r.ds)
				}
			}
			left = append(left, r.ds[0].Remaining)
		case <-time.After(10 * time.Second):
			t.Fatal("a batched call had no answer in 10 s")
		}
	}
	slices.Sort(left)
	for i, n := range left {
		if n != 990+i {
			t.Fatalf("a's remaining over the admitted batched calls %v, want 990...998: each charged once, the refused call not", left)
		}
	}
	if refused != 1 {
		t.Fatalf("%d calls with the spent key answered, want 1", refused)
	}
	h.sized(t, 4, 4, 2) // one script per call
	waitIdle(t, redisstore.LimiterOf(m))
	ds, err := m.Allow(ctx, three)
	if err != nil || ds[1].Remaining != 998-2*10 {
		t.Fatalf("b after 10 admitted calls of 2 and this one: %+v, %v; want %d left", ds, err, 998-2*10)
	}
	if n := len(h.seen()); n != 3 {
		t.Fatalf("%d pipelines after a lone call, want still 3", n)
	}
}

type multiResult struct {
	ds  []core.Decision
	err error
}
