package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

func TestConstructors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		got, want core.Limit
	}{
		{core.PerSecond(5), core.Limit{Events: 5, Period: time.Second, Burst: 5}},
		{core.PerMinute(5), core.Limit{Events: 5, Period: time.Minute, Burst: 5}},
		{core.PerHour(5), core.Limit{Events: 5, Period: time.Hour, Burst: 5}},
		{core.PerDay(5), core.Limit{Events: 5, Period: 24 * time.Hour, Burst: 5}},
		{core.Every(250 * ms), core.Limit{Events: 1, Period: 250 * ms, Burst: 1}},
		{core.PerSecond(5).WithBurst(2).WithName("api"), core.Limit{Events: 5, Period: time.Second, Burst: 2, Name: "api"}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %+v, want %+v", c.got, c.want)
		}
		if err := c.got.Validate(); err != nil {
			t.Errorf("%v: %v", c.got, err)
		}
	}
	if got := (core.Limit{Events: 3, Period: time.Second}).Interval(); got != 333333334 {
		t.Errorf("Interval of 3/s = %d, want 333333334 (rounded up)", got)
	}
	if got := (core.Limit{Events: 3, Period: time.Second}).EffectiveBurst(); got != 3 {
		t.Errorf("EffectiveBurst with Burst 0 = %d, want Events", got)
	}
}

func TestParseLimit(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want core.Limit
	}{
		{"100/s", core.PerSecond(100)},
		{"5/min", core.PerMinute(5)},
		{"150/h", core.PerHour(150)},
		{"2/day", core.PerDay(2)},
		{"2/DAYS", core.PerDay(2)},
		{"1000/h burst=50", core.PerHour(1000).WithBurst(50)},
		{"10/s name=login", core.PerSecond(10).WithName("login")},
		{"  10/second   name=a.b:c-d_e  burst=3 ", core.PerSecond(10).WithBurst(3).WithName("a.b:c-d_e")},
		{"30/10s", core.Limit{Events: 30, Period: 10 * time.Second, Burst: 30}},
		{"1/1m30s", core.Limit{Events: 1, Period: 90 * time.Second, Burst: 1}},
		{"7/500ms", core.Limit{Events: 7, Period: 500 * ms, Burst: 7}},
		{"3/2min", core.Limit{Events: 3, Period: 2 * time.Minute, Burst: 3}},
		{"3/minutes", core.PerMinute(3)},
		{"1/ms", core.Limit{Events: 1, Period: ms, Burst: 1}},
		// A setting of 0 is its default, as the zero value of its field is.
		{"5/s burst=0", core.PerSecond(5)},
		{"5/s burst=0 name=a", core.PerSecond(5).WithName("a")},
		{"5/s algorithm=sliding-log max-entries=0", core.PerSecond(5).WithAlgorithm(core.SlidingLog)},
	}
	for _, c := range ok {
		got, err := core.ParseLimit(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, mention string }{
		{"", "empty limit"},
		{"   ", "empty limit"},
		{"100", "no '/'"},
		{"0/s", "events \"0\""},
		{"-5/s", "events \"-5\""},
		{"+5/s", "events \"+5\""},
		{"1.5/s", "events \"1.5\""},
		{"99999999999/s", "events \"99999999999\""},
		{"5/", "period is empty"},
		{"5/fortnight", "period \"fortnight\""},
		{"5/0s", "period \"0s\""},
		{"5/-1s", "period \"-1s\""},
		{"5/s burst", "not key=value"},
		{"5/s burst=x", "burst \"x\""},
		{"5/s burst=1 burst=2", "given twice"},
		{"5/s color=red", "unknown option \"color\""},
		{"5/s name=", "name is empty"},
		{"5/s name=a\"b", "name \"a\\\"b\""},
		{"5/s name=" + strings.Repeat("x", 65), "at most 64"},
		{"1/d burst=2000000000", "lower the burst"},
		{"5/99999999999h", "period"},
	}
	for _, c := range bad {
		got, err := core.ParseLimit(c.in)
		if err == nil {
			t.Errorf("ParseLimit(%q) = %+v, want an error", c.in, got)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) || !strings.HasPrefix(err.Error(), "core: ") {
			t.Errorf("ParseLimit(%q) error %q should start with \"core: \" and mention %q", c.in, err, c.mention)
		}
	}
}

func TestLimitStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, l := range []core.Limit{
		core.PerSecond(100), core.PerMinute(5).WithBurst(1), core.PerHour(3).WithName("x"),
		core.PerDay(9), {Events: 4, Period: 1500 * ms}, {Events: 4, Period: 7 * time.Nanosecond, Burst: 2, Name: "n"},
	} {
		got, err := core.ParseLimit(l.String())
		if err != nil {
			t.Fatalf("ParseLimit(%q): %v", l.String(), err)
		}
		if !sameLimit(got, l) {
			t.Errorf("round trip of %+v via %q gave %+v", l, l.String(), got)
		}
	}
}

func sameLimit(a, b core.Limit) bool {
	a.Burst, b.Burst = a.EffectiveBurst(), b.EffectiveBurst()
	return a == b
}

// TestParsePolicy: the algorithm and its settings parse into the Limit's
// fields, a setting implies its algorithm, String writes them back, and a
// setting another algorithm was named for is refused with the reason.
func TestParsePolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want core.Limit
	}{
		{"100/min burst=20 name=api algorithm=gcra", core.PerMinute(100).WithBurst(20).WithName("api").WithAlgorithm(core.GCRA)},
		{"10/s max-delay=2s", core.PerSecond(10).WithMaxDelay(2 * time.Second)},
		{"100/s warm-up=1m cold-factor=2.5", core.PerSecond(100).WithWarmUp(time.Minute, 2.5)},
		{"100/min sub-windows=6", core.PerMinute(100).WithSubWindows(6)},
		{"5000/h algorithm=Sliding-Log max-entries=8192", core.PerHour(5000).WithAlgorithm(core.SlidingLog).WithMaxEntries(8192)},
		{"10/s overdraft=true", core.PerSecond(10).WithOverdraft()},
		{"8/s algorithm=concurrency", core.InFlight(8)},
	} {
		got, err := core.ParseLimit(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if again, err := core.ParseLimit(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, got.String(), again, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"10/s algorithm=gcra max-delay=1s", "MaxDelay applies to LeakyBucket only, not gcra"},
		{"10/s algorithm=bucket", `unknown algorithm "bucket"`},
		{"10/s overdraft=yes", "want true or false"},
		{"10/s cold-factor=3", "apply to the WarmUp algorithm only"},
		{"10/s warm-up=soon", `warm-up "soon"`},
		{"10/s sub-windows=1", `sub-windows "1": want a whole number from 2 to`},
		{"10/s flavour=mint", "unknown option"},
	} {
		if _, err := core.ParseLimit(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseLimit(%q): %v, want an error saying %q", c.in, err, c.want)
		}
	}
}

// FuzzParseLimit: the parser never panics; what it accepts is valid and
// survives a round trip through String.
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"100/s", "5/min burst=2", "10/s name=login", "30/10s", "1/1m30s", "0/s", "5/x", "", "1/d burst=99 name=a",
		"100/min algorithm=gcra", "10/s max-delay=2s", "100/s warm-up=1m cold-factor=2.5", "100/min sub-windows=6 max-entries=6",
		"10/s overdraft=true", "3/s algorithm=sliding-log max-entries=3", "10/s algorithm=gcra sub-windows=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := core.ParseLimit(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "core: ") {
				t.Fatalf("error without package prefix: %v", err)
			}
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("ParseLimit(%q) accepted an invalid limit %+v: %v", s, l, err)
		}
		again, err := core.ParseLimit(l.String())
		if err != nil || !sameLimit(again, l) {
			t.Fatalf("round trip of %q: %q -> %+v, %v", s, l.String(), again, err)
		}
	})
}

// TestParseLimitMessages: every error quotes the whole string, whatever
// part is wrong, and a number out of range gets one wording whether it is
// negative, zero or not a number.
func TestParseLimitMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"5 per second", `core: limit "5 per second": no '/'; write events/period, like "5/second"`},
		{"5 a minute", `core: limit "5 a minute": no '/'; write events/period, like "100/s"`},
		{"-5/s", `core: limit "-5/s": events "-5": want a whole number from 1 to 2147483647`},
		{"0/s", `core: limit "0/s": events "0": want a whole number from 1 to 2147483647`},
		{"five/s", `core: limit "five/s": events "five": want a whole number from 1 to 2147483647`},
		{"5/s burst=-5", `core: limit "5/s burst=-5": burst "-5": want a whole number from 0 to 2147483647`},
		{"5/s burst=x", `core: limit "5/s burst=x": burst "x": want a whole number from 0 to 2147483647`},
		{"5/s sub-windows=0", `core: limit "5/s sub-windows=0": sub-windows "0": want a whole number from 2 to 2147483647`},
		{"5/s sub-windows=-5", `core: limit "5/s sub-windows=-5": sub-windows "-5": want a whole number from 2 to 2147483647`},
		{"5/fortnight", `core: limit "5/fortnight": period "fortnight" is not a unit (s, min, h, d) or a positive duration like 10s`},
		{"5/", `core: limit "5/": the period is empty; use a unit like s, min, h, d or a duration like 10s`},
		{"5/s color=red", `core: limit "5/s color=red": unknown option "color"; use burst, name, algorithm, overdraft, max-delay, warm-up, cold-factor, sub-windows, max-entries`},
		{"5/s algorithm=bucket", `core: limit "5/s algorithm=bucket": unknown algorithm "bucket"; use token-bucket, gcra, fixed-window, sliding-window, leaky-bucket, warm-up, sliding-log or concurrency`},
		{"5/s algorithm=gcra overdraft=true", `core: limit "5/s algorithm=gcra overdraft=true": Overdraft applies to the token bucket only, not gcra`},
		{"1/d burst=2000000000", `core: limit "1/d burst=2000000000": burst 2000000000 at one event per 24h0m0s spans more than 640511h56m49.213693951s; lower the burst or raise the rate`},
		{" ", `core: empty limit; write it like "100/s" or "5/min burst=10"`},
	} {
		t.Run(c.in, func(t *testing.T) {
			if _, err := core.ParseLimit(c.in); err == nil || err.Error() != c.want {
				t.Errorf("ParseLimit(%q) error:\n got %v\nwant %s", c.in, err, c.want)
			}
		})
	}
}

// TestBurstZero: a burst of 0 means the same as events wherever it is
// said, and the same as leaving the burst out: a fresh key takes 5 at
// once and not a sixth.
func TestBurstZero(t *testing.T) {
	t.Parallel()
	for name, l := range map[string]core.Limit{
		"WithBurst(0)":         core.PerSecond(5).WithBurst(0),
		"Limit without Burst":  {Events: 5, Period: time.Second},
		`ParseLimit burst=0`:   core.MustParseLimit("5/s burst=0"),
		"ParseLimit, no burst": core.MustParseLimit("5/s"),
	} {
		t.Run(name, func(t *testing.T) {
			if l.EffectiveBurst() != 5 || !sameLimit(l, core.PerSecond(5)) {
				t.Errorf("%+v is not PerSecond(5)", l)
			}
			lim, _ := newLimiter(t, l)
			for i := range 5 {
				if d := allow(t, lim, "k", 1); !d.Allowed || d.Remaining != 4-i {
					t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, 4-i)
				}
			}
			if d := allow(t, lim, "k", 1); d.Allowed {
				t.Errorf("request 6: %+v, want refused", d)
			}
		})
	}
}
