package rlsconfig

import (
	"testing"

	"github.com/floodgate/floodgate/core"
)

// TestBurstZero: burst: 0 means what it means in core.ParseLimit and
// Limit.WithBurst, the same as requests_per_unit, as leaving burst out
// does; so it is no error for an algorithm that ignores burst either.
func TestBurstZero(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		alg          core.Algorithm
	}{
		{"gcra", ", algorithm: gcra", core.GCRA},
		{"token bucket", ", algorithm: token-bucket", core.TokenBucket},
		{"fixed window", "", core.FixedWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := func(burst string) core.Limit {
				t.Helper()
				d, err := Parse("b.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 5"+tc.fields+burst+"}\n"))
				if err != nil {
					t.Fatal(err)
				}
				r := d.Match(e("k=v"))
				if r == nil || len(r.Limits) != 1 {
					t.Fatalf("rule %+v", r)
				}
				return r.Limits[0]
			}
			zero, none := limit(", burst: 0"), limit("")
			if zero != none || zero.EffectiveBurst() != 5 || zero.Algorithm != tc.alg {
				t.Errorf("burst: 0 gives %+v, no burst %+v; want the same, with a burst of 5 and %v", zero, none, tc.alg)
			}
			parsed := core.MustParseLimit("5/s burst=0 algorithm=" + tc.alg.String())
			if zero.EffectiveBurst() != parsed.EffectiveBurst() || core.PerSecond(5).WithBurst(0).EffectiveBurst() != zero.EffectiveBurst() {
				t.Errorf("burst: 0 is a burst of %d; ParseLimit's burst=0 %d", zero.EffectiveBurst(), parsed.EffectiveBurst())
			}
		})
	}
}
