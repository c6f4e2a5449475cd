package redisstore

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

// TestArgsServerClock: a call on the server's clock sends the operation,
// the cost and the limit's fixed arguments, nothing for the clock; a test
// clock follows the operation in ARGV[1].
func TestArgsServerClock(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	clk := coretest.NewClock(time.Unix(1764115200, 250_000_000))
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.FixedWindow} {
		l, err := New(c, core.PerSecond(100).WithAlgorithm(alg))
		if err != nil {
			t.Fatal(err)
		}
		args := l.args(l.pol, 'a', 3, "")
		if len(args) != 2+len(l.pol.fixed) || args[0] != "a" || args[1] != "3" || args[2] != "1000" {
			t.Errorf("%v: args %q, want a, 3, then the margin and the parameters %q", alg, args, l.pol.fixed)
		}
		l, err = New(c, core.PerSecond(100).WithAlgorithm(alg), withScriptClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		if args := l.args(l.pol, 'r', 1, ""); len(args) != 2+len(l.pol.fixed) || args[0] != "r 1764115200 250000000" {
			t.Errorf("%v with a test clock: args %q", alg, args)
		}
	}
}

// TestBucketAdmitted: a token bucket admission's reply {2, m, x} reads
// back as the very double the script left (m·2^x, as the script sends a
// whole count, or frexp's mantissa scaled to 53 bits), and a reply no
// admission gives is a store error.
func TestBucketAdmitted(t *testing.T) {
	b := newBucket(core.PerSecond(100), false)
	for _, tk := range []float64{99, 0, -3, 0.5, 99.99999990000001, -0.1, 1e-9, 12345.678901234567, 2147483646.75} {
		v := vals{2, int64(tk), 0}
		if tk != math.Floor(tk) {
			m, x := math.Frexp(tk)
			v = vals{2, int64(m * (1 << 53)), int64(x - 53)}
		}
		if got := math.Ldexp(float64(v[1]), int(v[2])); got != tk {
			t.Errorf("%v: read back as %v", tk, got)
		}
		got, err := b.admitted(v)
		if err != nil || got[0] != 1 || got[1] != b.remaining(tk) || got[3] != b.wait(tk) {
			t.Errorf("%v: %v %v", tk, got, err)
		}
	}
	if _, err := (*bucket)(nil).admitted(vals{2, 1, 0}); err == nil {
		t.Error("no bucket: no error")
	}
	if _, err := b.admitted(vals{2, 1, 5000}); err == nil {
		t.Error("exponent 5000: no error")
	}
}
