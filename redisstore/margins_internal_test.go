package redisstore

import (
	"strconv"
	"testing"
	"time"
)

// TestMargins: the margins a call draws from, in ms, are the margin alone
// without jitter; every millisecond from the margin to the margin plus a
// jitter shorter than 64 ms; else 64 evenly spaced values, both ends
// included.
func TestMargins(t *testing.T) {
	ms := func(m margins) []int64 {
		out := make([]int64, len(m))
		for i, v := range m {
			n, err := strconv.ParseInt(v.(string), 10, 64)
			if err != nil {
				t.Fatalf("margin %v: %v", v, err)
			}
			out[i] = n
		}
		return out
	}
	for _, tt := range []struct {
		name           string
		margin, jitter time.Duration
		n              int
		first, last    int64
		gaps           []int64 // the steps between neighbours, each of these
	}{
		{"none", time.Second, 0, 1, 1000, 1000, nil},
		{"sub-millisecond", time.Second, 999 * time.Microsecond, 1, 1000, 1000, nil},
		{"10ms", time.Second, 10 * time.Millisecond, 11, 1000, 1010, []int64{1}},
		{"63ms", time.Millisecond, 63 * time.Millisecond, 64, 1, 64, []int64{1}},
		{"64ms", time.Millisecond, 64 * time.Millisecond, 64, 1, 65, []int64{1, 2}},
		{"300s", time.Second, 300 * time.Second, 64, 1000, 301000, []int64{4761, 4762}},
		{"24h", time.Second, maxTTLJitter, 64, 1000, 86_401_000, []int64{1371428, 1371429}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ms(marginsOf(tt.margin, tt.jitter))
			if len(got) != tt.n || got[0] != tt.first || got[len(got)-1] != tt.last {
				t.Fatalf("%d margins from %d to %d, want %d from %d to %d: %v", len(got), got[0], got[len(got)-1], tt.n, tt.first, tt.last, got)
			}
			for i := 1; i < len(got); i++ {
				if g := got[i] - got[i-1]; g != tt.gaps[0] && (len(tt.gaps) == 1 || g != tt.gaps[1]) {
					t.Fatalf("step %d: %d ms, want one of %v: %v", i, g, tt.gaps, got)
				}
			}
		})
	}
}

// TestMarginsPick: a call's margin is drawn uniformly from the table, and
// without jitter is the margin; neither allocates.
func TestMarginsPick(t *testing.T) {
	m := marginsOf(time.Second, 300*time.Second)
	index := map[any]int{}
	for i, v := range m {
		index[v] = i
	}
	const draws = 64 * 1000
	var counts [jitterSteps]int
	for range draws {
		i, ok := index[m.pick()]
		if !ok {
			t.Fatal("pick returned a value not in the table")
		}
		counts[i]++
	}
	// 1,000 expected of each, a standard deviation of about 31: a
	// generator that skips or favours a step falls far outside.
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("step %d drawn %d times of %d, want about 1000: %v", i, c, draws, counts)
		}
	}
	one := marginsOf(time.Second, 0)
	if v := one.pick(); v != one[0] || v.(string) != "1000" {
		t.Errorf("no jitter: picked %v, want 1000", v)
	}
	if a := testing.AllocsPerRun(1000, func() { _ = m.pick(); _ = one.pick() }); a != 0 {
		t.Errorf("pick allocates %v times", a)
	}
}

// TestMarginsShared: limiters of one margin and jitter share one table, up
// to maxMarginTables of them; beyond, each makes its own, still right.
func TestMarginsShared(t *testing.T) {
	a, b := marginsOf(time.Second, time.Minute), marginsOf(time.Second, time.Minute)
	if &a[0] != &b[0] {
		t.Error("two limiters of one margin and jitter made two tables")
	}
	for i := range 2 * maxMarginTables {
		m := marginsOf(time.Second, time.Duration(100+i)*time.Millisecond)
		if len(m) != jitterSteps || m[len(m)-1].(string) != strconv.Itoa(1100+i) {
			t.Fatalf("jitter %d ms: %d margins ending %v", 100+i, len(m), m[len(m)-1])
		}
	}
	marginTables.Lock()
	n := len(marginTables.m)
	marginTables.Unlock()
	if n > maxMarginTables {
		t.Errorf("%d tables kept, want at most %d", n, maxMarginTables)
	}
}
