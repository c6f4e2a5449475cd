package core_test

import (
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// The decision tables of LeakyBucket, WarmUp and WithOverdraft, refunds
// included, are shared with every store: see coretest.Tables, played by
// TestDecisionTables.

// TestPolicyOptions: options that do not fit the algorithm, or bad values,
// fail at construction with a message saying what to fix.
func TestPolicyOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l    core.Limit
		want string
	}{
		{core.PerSecond(10).WithOverdraft().WithAlgorithm(core.GCRA), "token bucket only"},
		{core.Limit{Events: 10, Period: time.Second, MaxDelay: time.Second}, "LeakyBucket only"},
		{core.PerSecond(10).WithMaxDelay(-1), "must be > 0"},
		{core.Limit{Events: 10, Period: time.Second, WarmUp: time.Second}, "WarmUp algorithm only"},
		{core.PerSecond(10).WithAlgorithm(core.WarmUp), "needs a warm-up period"},
		{core.PerSecond(10).WithWarmUp(time.Second, 0.5), "cold factor must be from 1"},
		{core.PerSecond(10).WithWarmUp(-time.Second, 3), "warm-up period > 0"},
		{core.PerSecond(10).WithSubWindows(4).WithAlgorithm(core.FixedWindow), "SlidingWindow only"},
	}
	for _, c := range cases {
		if err := c.l.Validate(); err == nil || !contains(err.Error(), c.want) {
			t.Errorf("Validate: %v, want an error saying %q", err, c.want)
		}
		_, err := core.New(c.l)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}
