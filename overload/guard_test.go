package overload_test

import (
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
	"github.com/floodgate/floodgate/overload"
)

// TestReading: a guard's reading is its limit, what it holds in flight
// and the latency it judges by; BBR's limit is 0 while none applies.
func TestReading(t *testing.T) {
	t.Parallel()
	clk := coretest.NewClock(coretest.T0)
	a, err := overload.NewAdaptive(overload.AdaptiveConfig{Clock: clk, InitialLimit: 8})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := a.Acquire(overload.Normal, 3)
	if r := a.Reading(); r != (overload.Reading{Limit: 8, InFlight: 3}) {
		t.Fatalf("Adaptive: %+v, want limit 8, 3 in flight, no latency yet", r)
	}
	tok.End(core.EndDone)
	cpu := 0.1
	b, err := overload.NewBBR(overload.BBRConfig{Clock: clk, CPU: func() float64 { return cpu }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if r := b.Reading(); r != (overload.Reading{}) {
		t.Fatalf("BBR, cool: %+v, want nothing", r)
	}
	cpu = 0.9
	if r := b.Reading(); r.Limit < 1 {
		t.Fatalf("BBR, hot: %+v, want the bound that applies (at least 1)", r)
	}
}
