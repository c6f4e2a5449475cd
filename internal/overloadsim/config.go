package overloadsim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/floodgate/floodgate/overload"
)

// Step sets the offered load from At on, in multiples of the server's
// capacity at the start of the run (Config.Capacity): 2 is twice what the
// server can answer.
type Step struct {
	At   time.Duration
	Load float64
}

// Resize sets the number of workers from At on. Requests in service keep
// their worker until they finish; no new one starts while as many are busy
// as there are workers. With Config.Shared, it sets the cores, which the
// requests in flight share from At on.
type Resize struct {
	At      time.Duration
	Workers int
}

// Class is one priority of the traffic and its share of the requests.
type Class struct {
	Priority overload.Priority
	Weight   float64
}

// Config is one simulated run. The zero value of each field is its
// default, except Duration and Load, which a run must have.
type Config struct {
	// Seed seeds every draw: the same Config gives the same Result, bit
	// for bit.
	Seed uint64
	// Workers is how many requests the server serves at once (default 50).
	Workers int
	// Shared makes the Workers cores that every request in flight shares
	// equally (processor sharing, as goroutines share GOMAXPROCS): with n
	// in flight, each is served at min(1, Workers/n) of full speed, and
	// none waits in a queue; so beyond Workers in flight every request is
	// slowed alike. False: Workers workers serve a FIFO queue, one
	// request each at full speed.
	Shared bool
	// MeanService is the mean service time (default 5 ms).
	MeanService time.Duration
	// Sigma is the shape of the lognormal service time, the standard
	// deviation of its logarithm (default 0.5: a p99 of 2.8× the mean). A
	// negative Sigma means 0: every service takes MeanService.
	Sigma float64
	// SLOFactor sets the deadline, SLOFactor × MeanService (default 5): a
	// request answered later is not goodput, and its controller is told
	// it was dropped.
	SLOFactor float64
	// Duration is the length of the run.
	Duration time.Duration
	// Load is the offered load, a schedule of steps; the first must be at 0.
	Load []Step
	// Arrivals, when set, replace the Poisson stream of Load: the requests
	// arrive at these times, in order (for hand-checked cases and replays).
	Arrivals []time.Duration
	// Resizes change the number of workers live, in order of At.
	Resizes []Resize
	// Classes are the priorities of the requests and their shares
	// (default: all Normal).
	Classes []Class
	// Tenants are the tenants' shares of each class's requests (default:
	// one tenant). Tenant i is keyed "t<i>".
	Tenants []float64
	// Bin is the length of the bins the Result counts in (default 100 ms).
	Bin time.Duration
	// MaxQueue bounds the server's queue, to bound the memory of a run
	// with no protection (0: unbounded). A request admitted to a full
	// queue fails at once, as dropped. With Shared, it bounds the
	// requests in flight beyond Workers.
	MaxQueue int
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 50
	}
	if c.MeanService == 0 {
		c.MeanService = 5 * time.Millisecond
	}
	if c.Sigma == 0 {
		c.Sigma = 0.5
	}
	if c.SLOFactor == 0 {
		c.SLOFactor = 5
	}
	if len(c.Classes) == 0 {
		c.Classes = []Class{{Priority: overload.Normal, Weight: 1}}
	}
	if len(c.Tenants) == 0 {
		c.Tenants = []float64{1}
	}
	if c.Bin == 0 {
		c.Bin = 100 * time.Millisecond
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Workers < 1:
		return fmt.Errorf("overloadsim: Workers must be >= 1, got %d", c.Workers)
	case c.MeanService <= 0 || c.SLOFactor <= 0:
		return errors.New("overloadsim: MeanService and SLOFactor must be > 0")
	case c.Duration <= 0:
		return errors.New("overloadsim: Duration must be > 0")
	case len(c.Arrivals) == 0 && (len(c.Load) == 0 || c.Load[0].At != 0):
		return errors.New("overloadsim: Load must start with a step at 0 (or Arrivals be set)")
	case c.Bin <= 0 || c.MaxQueue < 0:
		return errors.New("overloadsim: Bin must be > 0 and MaxQueue >= 0")
	}
	for i, s := range c.Load {
		if s.Load < 0 || i > 0 && s.At < c.Load[i-1].At {
			return fmt.Errorf("overloadsim: Load step %d: loads must be >= 0 and steps in order", i)
		}
	}
	for i, a := range c.Arrivals {
		if a < 0 || i > 0 && a < c.Arrivals[i-1] {
			return fmt.Errorf("overloadsim: Arrivals[%d]: times must be >= 0 and in order", i)
		}
	}
	for i, r := range c.Resizes {
		if r.Workers < 1 || i > 0 && r.At < c.Resizes[i-1].At {
			return fmt.Errorf("overloadsim: Resize %d: Workers must be >= 1 and resizes in order", i)
		}
	}
	for _, w := range [][]float64{weights(c.Classes), c.Tenants} {
		sum := 0.0
		for _, x := range w {
			if x < 0 {
				return errors.New("overloadsim: class and tenant weights must be >= 0")
			}
			sum += x
		}
		if sum <= 0 {
			return errors.New("overloadsim: class and tenant weights must not all be 0")
		}
	}
	return nil
}

func weights(cs []Class) []float64 {
	w := make([]float64, len(cs))
	for i, c := range cs {
		w[i] = c.Weight
	}
	return w
}

// Capacity is the server's capacity at the start of the run, in requests
// per second: Workers / MeanService.
func (c Config) Capacity() float64 {
	c = c.withDefaults()
	return float64(c.Workers) / c.MeanService.Seconds()
}

// SLO is the deadline a request must be answered within to count as
// goodput: SLOFactor × MeanService.
func (c Config) SLO() time.Duration {
	c = c.withDefaults()
	return time.Duration(c.SLOFactor * float64(c.MeanService))
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// UnloadedP99 is the p99 latency of an idle server, the service time's
// p99: exp(mu + 2.326 sigma) with mu = ln(mean) - sigma²/2.
func (c Config) UnloadedP99() time.Duration {
	c = c.withDefaults()
	return time.Duration(math.Round(math.Exp(c.mu() + z99*c.sigma())))
}

// sigma is Sigma, 0 when negative.
func (c Config) sigma() float64 { return max(0, c.Sigma) }

// mu is the mean of the service time's logarithm, for a mean of
// MeanService.
func (c Config) mu() float64 { return math.Log(float64(c.MeanService)) - c.sigma()*c.sigma()/2 }
