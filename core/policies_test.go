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
		opts []core.Option
		want string
	}{
		{[]core.Option{core.WithOverdraft(), core.WithAlgorithm(core.GCRA)}, "token bucket only"},
		{[]core.Option{core.WithMaxDelay(time.Second)}, "LeakyBucket only"},
		{[]core.Option{core.WithAlgorithm(core.LeakyBucket), core.WithMaxDelay(-1)}, "must be > 0"},
		{[]core.Option{core.WithWarmUp(time.Second, 3)}, "WarmUp only"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp)}, "needs WithWarmUp"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp), core.WithWarmUp(time.Second, 0.5)}, "cold factor must be from 1"},
		{[]core.Option{core.WithAlgorithm(core.WarmUp), core.WithWarmUp(-time.Second, 3)}, "warm-up period must be > 0"},
	}
	for _, c := range cases {
		_, err := core.New(core.PerSecond(10), c.opts...)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
}
