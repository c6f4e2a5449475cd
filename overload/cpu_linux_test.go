//go:build linux

package overload

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// On this machine's own cgroup (or process time), the reading stays in
// [0, 1] and rises while goroutines spin on every usable CPU: a second of
// spinning at most.
func TestCPUOnThisMachine(t *testing.T) {
	c, err := newCPU(CPUConfig{FS: os.DirFS("/"), Smoothing: time.Millisecond, Clock: core.SystemClock},
		cpuDeps{numCPU: runtime.NumCPU(), procTime: processCPUTime})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reading %s", c.source)
	samples := make(chan float64, 64)
	c.onSample = func() {
		select {
		case samples <- c.Load():
		default:
		}
	}
	ticker := time.NewTicker(25 * time.Millisecond)
	c.start(ticker.C, ticker.Stop)
	defer c.Close()
	read := func() float64 {
		v := <-samples
		if v < 0 || v > 1 {
			t.Fatalf("read %v, outside [0, 1]", v)
		}
		return v
	}
	idle := 0.0
	for range 4 {
		idle = max(idle, read())
	}
	if idle > 0.9 {
		t.Skipf("the CPUs are %.2f busy already: no room to see a rise", idle)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	busy := 0.0
	for time.Now().Before(deadline) && busy <= idle+0.2 {
		busy = max(busy, read())
	}
	if busy <= idle+0.2 {
		t.Fatalf("idle %.2f, spinning at most %.2f: want a rise of more than 0.2", idle, busy)
	}
	t.Logf("idle at most %.2f, spinning %.2f", idle, busy)
}
