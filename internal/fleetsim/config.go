package fleetsim

import (
	"fmt"
	"time"
)

// Strategy is how the fleet decides on the shared key.
type Strategy int

const (
	// GlobalStore sends every decision to the one store in region 0.
	GlobalStore Strategy = iota + 1
	// RegionalLeases runs a grantor per region that leases units from the
	// global store (length RegionLease) and leases them on to the
	// region's instances (length Lease).
	RegionalLeases
	// GlobalLeases has every instance lease units from the global store
	// directly (length Lease).
	GlobalLeases
	// AsyncHits answers from each instance's local view at once and sends
	// the hits to the key's owner in region 0 every SyncEvery; the owner
	// sends the state back to every instance, as gubernator's GLOBAL
	// behaviour does.
	AsyncHits
)

// String names the strategy as the report does.
func (s Strategy) String() string {
	switch s {
	case GlobalStore:
		return "one global store"
	case RegionalLeases:
		return "regional leases"
	case GlobalLeases:
		return "global leases"
	case AsyncHits:
		return "async hits"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Phase is a stretch of the run during which each region offers a steady
// Poisson stream of requests, split evenly over its live instances.
type Phase struct {
	Start time.Duration
	Rates []float64 // requests per second, one per region
}

// Kill stops one instance mid-lease, at the first millisecond from At on
// at which it holds unspent units: it loses them (nothing is returned)
// and its region's traffic moves to the region's other instances.
type Kill struct {
	At               time.Duration
	Region, Instance int
}

// Config is one simulated run.
type Config struct {
	Strategy  Strategy
	Limit     Limit
	Regions   int // region 0 holds the global store (and the owner, for AsyncHits)
	Instances int // per region
	// Local and Remote are one-way delays inside a region and between
	// regions.
	Local, Remote time.Duration
	// Lease is an instance's lease length L (default min(Period/10, 1s));
	// RegionLease is a regional grantor's L2 (default max(L, 5 × the
	// round trip between regions), so that a regional lease still has
	// most of its length left when it arrives).
	Lease, RegionLease time.Duration
	// Backoff is how long a holder refuses locally after a grant of 0
	// units before it asks again (default L/10).
	Backoff time.Duration
	// SyncEvery is AsyncHits' interval between sends of hits and of the
	// owner's state.
	SyncEvery time.Duration
	Phases    []Phase
	Duration  time.Duration
	Seed      uint64
	Kill      *Kill // RegionalLeases and GlobalLeases only
}

// withDefaults fills the lease lengths and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if err := c.Limit.validate(); err != nil {
		return c, err
	}
	if c.Strategy < GlobalStore || c.Strategy > AsyncHits {
		return c, fmt.Errorf("fleetsim: unknown strategy %d", int(c.Strategy))
	}
	if c.Regions < 1 || c.Instances < 1 || c.Duration <= 0 || len(c.Phases) == 0 {
		return c, fmt.Errorf("fleetsim: a run needs regions, instances, a duration and phases")
	}
	for _, p := range c.Phases {
		if len(p.Rates) != c.Regions {
			return c, fmt.Errorf("fleetsim: phase at %v has %d rates for %d regions", p.Start, len(p.Rates), c.Regions)
		}
	}
	if c.Lease == 0 {
		c.Lease = min(c.Limit.Period/10, time.Second)
	}
	if c.RegionLease == 0 {
		c.RegionLease = max(c.Lease, 10*c.Remote)
	}
	if c.RegionLease < c.Lease {
		return c, fmt.Errorf("fleetsim: RegionLease %v is shorter than Lease %v", c.RegionLease, c.Lease)
	}
	if c.Backoff == 0 {
		c.Backoff = c.Lease / 10
	}
	if c.Strategy == AsyncHits && c.SyncEvery <= 0 {
		return c, fmt.Errorf("fleetsim: AsyncHits needs SyncEvery > 0")
	}
	if c.Kill != nil && c.Strategy != RegionalLeases && c.Strategy != GlobalLeases {
		return c, fmt.Errorf("fleetsim: Kill needs a lease strategy")
	}
	return c, nil
}

// widen is how long after its charge at the global state a unit may be
// spent: the interval by which the documented bound widens each window.
func (c Config) widen() time.Duration {
	switch c.Strategy {
	case GlobalStore:
		return c.Remote // the reply's one-way trip back to a remote instance
	case RegionalLeases:
		return c.RegionLease
	case GlobalLeases:
		return c.Lease
	}
	return 0
}
