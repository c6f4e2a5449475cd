package rls_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// TestSprayLeavesFreshValuesTheirLimit: a client sends 10⁶ requests, each
// with a descriptor value of its own (a path it makes up), under a rule of
// 1000 an hour per value, in memory. Every one is decided on its own, the
// heap stays within what the rule's table holds, and then a fresh value
// still gets its whole limit while a value drained before the spray stays
// refused. (Before, the spray filled the rule's table and every new value
// shared one overflow quota, which 1,000 of the spray's requests drained:
// the rule was shut to every fresh value for up to an hour.)
func TestSprayLeavesFreshValuesTheirLimit(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	const capacity = 16_384
	d, err := rlsconfig.Parse("web.yaml", []byte(`domain: web
descriptors:
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 1000}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
	if err != nil {
		t.Fatal(err)
	}
	clk := coretest.NewClock(time.Unix(1_800_000_000, 0))
	// No header fields: they are a third of a request's time here, and
	// nothing this test looks at.
	svc, err := rls.New(rls.Config{Store: rls.Memory(core.WithClock(clk), core.WithCapacity(capacity)), Headers: core.HeadersNone})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		t.Fatal(err)
	}
	entry := &rlcommon.RateLimitDescriptor_Entry{Key: "path"}
	req := &rlsv3.RateLimitRequest{Domain: "web", Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: []*rlcommon.RateLimitDescriptor_Entry{entry}}}}
	ask := func(value string, hits uint32) *rlsv3.RateLimitResponse_DescriptorStatus {
		entry.Value, req.HitsAddend = value, hits
		resp, err := svc.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatuses()[0]
	}
	if st := ask("/drained", 1000); st.GetCode() != rlsv3.RateLimitResponse_OK {
		t.Fatalf("/drained, 1000 hits: %v", st)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		if st := ask("/spray/"+strconv.Itoa(i), 1); st.GetCode() != rlsv3.RateLimitResponse_OK || st.GetLimitRemaining() != 999 {
			t.Fatalf("spray request %d: %v, want OK with 999 left", i, st)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap after %d sprayed values: %+d bytes (%.0f per tracked value)", n, grown, float64(grown)/capacity)
	// About 120 bytes per key the table tracks, and never more keys than
	// its capacity, however many values the spray sends.
	if bound := int64(256 * capacity); grown > bound {
		t.Fatalf("the heap grew by %d bytes over %d values, more than %d for a table of %d keys", grown, n, bound, capacity)
	}
	for v := 0; v < 20; v++ {
		value := "/fresh/" + strconv.Itoa(v)
		for i := 0; i < 1000; i++ {
			if st := ask(value, 1); st.GetCode() != rlsv3.RateLimitResponse_OK || st.GetLimitRemaining() != uint32(999-i) {
				t.Fatalf("%s request %d: %v, want OK with %d left", value, i, st, 999-i)
			}
		}
		if st := ask(value, 1); st.GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("%s past its limit: %v", value, st)
		}
	}
	if st := ask("/drained", 1); st.GetCode() != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("/drained after the spray: %v, want OVER_LIMIT (its state kept)", st)
	}
}
