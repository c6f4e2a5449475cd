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
// [0, 1], counts at least this process's own CPU time while goroutines
// spin on every usable CPU, and rises with them unless the machine was
// busy already (spinning a second at most).
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
		idle += read() / 4
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	read() // a sample that began before the spinning
	_, cores, err := c.read()
	if err != nil {
		t.Fatal(err)
	}
	own0, wall0 := mustProcTime(t), time.Now()
	busy := 0.0
	for range 8 {
		busy += read() / 8
	}
	own := float64(mustProcTime(t)-own0) / (float64(time.Since(wall0)) * cores)
	stop.Store(true)
	t.Logf("idle %.2f, spinning %.2f, of which this process %.2f (%v CPUs)", idle, busy, own, cores)
	// The group holds this process: it reads at least the process's share.
	if busy < own-0.15 {
		t.Errorf("spinning read %.2f, below this process's own %.2f", busy, own)
	}
	if idle > 0.75 {
		t.Skipf("the CPUs were %.2f busy already: no room to see a rise", idle)
	}
	if busy <= idle+0.2 {
		t.Fatalf("idle %.2f, spinning %.2f: want a rise of more than 0.2", idle, busy)
	}
}

func mustProcTime(t *testing.T) int64 {
	ns, err := processCPUTime()
	if err != nil {
		t.Fatal(err)
	}
	return ns
}
