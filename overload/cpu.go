package overload

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/core"
)

// CPUConfig configures a CPU reader ([NewCPU]). The zero value reads this
// process's container every 250 ms, smoothed over 400 ms.
type CPUConfig struct {
	// FS is the file system to find the cgroup in, rooted at "/" (nil:
	// the machine's). Tests pass a fake tree.
	FS fs.FS
	// Interval is the time between samples (0: 250 ms). Each sample is
	// the CPU used since the last one.
	Interval time.Duration
	// Smoothing is the time constant of the moving average over samples
	// (0: 400 ms): a sample taken dt after the last one moves the reading
	// 1 − e^(−dt/Smoothing) of the way to it. With the defaults the reading
	// crosses 0.8 within 1 s of a step from idle to saturated, where
	// kratos's average (0.95 per 500 ms) takes 16 s; a shorter Smoothing
	// reacts faster and passes on more of each sample's noise.
	Smoothing time.Duration
	// Clock times the samples (nil: core.SystemClock).
	Clock core.Clock
}

// CPU reads how busy the CPUs this process may use are, as a fraction
// from 0 (idle) to 1 (all used), smoothed; it is the default signal of the
// [BBR] limiter. It finds the process's cgroup (v2, or v1 as on hybrid systems)
// from /proc/self/cgroup and /proc/self/mountinfo and reads the group's
// CPU time used (cpu.stat's usage_usec; cpuacct.usage) against what it
// may use, the least of: the tightest CFS quota of the group and its
// ancestors (cpu.max; cpu.cfs_quota_us over cpu.cfs_period_us),
// fractional ones included; the CPUs of its cpuset
// (cpuset.cpus.effective; cpuset.effective_cpus or cpuset.cpus); the
// machine's (runtime.NumCPU). The root group, outside any container,
// counts every process on the machine. With no cgroup to read
// it counts the process's own CPU time over runtime.NumCPU.
//
// A goroutine samples until Close. A sample that cannot be read (a file
// gone) is skipped and the reading holds. It is safe for concurrent use.
type CPU struct {
	clock  core.Clock
	tau    float64 // Smoothing, in nanoseconds
	read   func() (used int64, cores float64, err error)
	source string // what is read, for tests and errors

	// Only the sampling goroutine touches these.
	lastUsed, lastAt int64

	value atomic.Uint64 // math.Float64bits of the smoothed reading

	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	onSample  func() // tests: called after each sample
}

// cpuDeps is what NewCPU takes from the machine, for tests to replace.
type cpuDeps struct {
	numCPU   int
	procTime func() (int64, error) // the process's CPU time in ns
}

// NewCPU returns a CPU reader, sampling until Close. It fails only when
// no CPU use can be read here at all (no cgroup and no process CPU time,
// on a system this package has no reader for).
func NewCPU(cfg CPUConfig) (*CPU, error) {
	c, err := newCPU(cfg, cpuDeps{numCPU: runtime.NumCPU(), procTime: processCPUTime})
	if err != nil {
		return nil, err
	}
	t := time.NewTicker(c.interval(cfg))
	c.start(t.C, t.Stop)
	return c, nil
}

// errNoProcTime: this system has no reader of a process's CPU time.
var errNoProcTime = errors.New("overload: no reader of the process's CPU time on " + runtime.GOOS)

// newCPU makes the reader and takes the baseline sample; start runs it.
func newCPU(cfg CPUConfig, d cpuDeps) (*CPU, error) {
	switch {
	case cfg.Interval < 0:
		return nil, fmt.Errorf("overload: CPUConfig.Interval must be >= 0 (0 for 250ms), got %v", cfg.Interval)
	case cfg.Smoothing < 0:
		return nil, fmt.Errorf("overload: CPUConfig.Smoothing must be >= 0 (0 for 400ms), got %v", cfg.Smoothing)
	}
	c := &CPU{clock: cfg.Clock, tau: float64(400 * time.Millisecond),
		quit: make(chan struct{}), done: make(chan struct{})}
	if c.clock == nil {
		c.clock = core.SystemClock
	}
	if cfg.Smoothing > 0 {
		c.tau = float64(cfg.Smoothing)
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = os.DirFS("/")
	}
	machine := float64(max(1, d.numCPU))
	if g, err := findCgroup(fsys); err == nil {
		c.source = fmt.Sprintf("cgroup v%d %s", g.version, g.usage)
		c.read = func() (int64, float64, error) {
			used, err := g.readUsage()
			cores := g.limit()
			if cores <= 0 || cores > machine {
				cores = machine
			}
			return used, cores, err
		}
	} else {
		if d.procTime == nil {
			return nil, fmt.Errorf("%w (and %v): set BBRConfig.CPU to a signal of your own", errNoProcTime, err)
		}
		c.source = "process"
		c.read = func() (int64, float64, error) {
			used, err := d.procTime()
			return used, machine, err
		}
	}
	used, _, err := c.read()
	if err != nil {
		return nil, fmt.Errorf("overload: reading the CPU used (%s): %v", c.source, err)
	}
	c.lastUsed, c.lastAt = used, c.clock.Now()
	return c, nil
}

func (c *CPU) interval(cfg CPUConfig) time.Duration {
	if cfg.Interval > 0 {
		return cfg.Interval
	}
	return 250 * time.Millisecond
}

// start samples at every tick until Close, then calls stop.
func (c *CPU) start(tick <-chan time.Time, stop func()) {
	go func() {
		defer close(c.done)
		defer stop()
		for {
			select {
			case <-c.quit:
				return
			case <-tick:
				c.sample()
				if c.onSample != nil {
					c.onSample()
				}
			}
		}
	}()
}

// sample reads the CPU used since the last sample, as a fraction of what
// the group may have used in that time, and moves the average toward it.
func (c *CPU) sample() {
	used, cores, err := c.read()
	now := c.clock.Now()
	if err != nil {
		return
	}
	dt := now - c.lastAt
	if dt <= 0 || used < c.lastUsed {
		// The clock stood still or stepped back, or the counter was
		// reset (a new group): start again from here.
		c.lastUsed, c.lastAt = used, now
		return
	}
	raw := float64(used-c.lastUsed) / (float64(dt) * cores)
	raw = min(1, max(0, raw))
	c.lastUsed, c.lastAt = used, now
	keep := math.Exp(-float64(dt) / c.tau) // what is left of the old reading
	c.value.Store(math.Float64bits(c.Load()*keep + raw*(1-keep)))
}

// Load returns the smoothed CPU use, from 0 to 1: 0 until the first
// sample. Its method value is what BBRConfig.CPU takes.
func (c *CPU) Load() float64 { return math.Float64frombits(c.value.Load()) }

// Close stops the sampling and waits for it to end. It is idempotent.
func (c *CPU) Close() error {
	c.closeOnce.Do(func() { close(c.quit) })
	<-c.done
	return nil
}
