package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

const seed = 1

// TestRun writes the charts into a temporary directory and checks that
// each is a PNG of a sensible size and that the summary lists every run.
func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "charts") // run makes it
	var out bytes.Buffer
	if err := run(&out, dir, seed); err != nil {
		t.Fatal(err)
	}
	names := []string{"comparison"}
	for _, p := range policies {
		names = append(names, p.name)
	}
	for _, name := range names {
		f, err := os.Open(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
			t.Errorf("%s.png is %dx%d, want a readable chart", name, b.Dx(), b.Dy())
		}
	}
	for _, p := range policies {
		for _, s := range shapes {
			if !strings.Contains(out.String(), "| "+p.name+" ") || !strings.Contains(out.String(), "| "+s.name+" ") {
				t.Errorf("summary has no row for %s on %s:\n%s", p.name, s.name, out.String())
			}
		}
	}
	if rows := strings.Count(out.String(), "\n| "); rows != 2+len(policies)*len(shapes) {
		t.Errorf("summary has %d table lines, want a header, a rule and %d rows:\n%s", rows, len(policies)*len(shapes), out.String())
	}
}

// find returns the run of the named policy on the named shape.
func find(t *testing.T, results []result, policy, shape string) *result {
	t.Helper()
	for i := range results {
		if results[i].policy.name == policy && results[i].shape.name == shape {
			return &results[i]
		}
	}
	t.Fatalf("no run of %s on %s", policy, shape)
	return nil
}

// TestFacts checks what the charts are meant to show, on the decisions
// themselves.
func TestFacts(t *testing.T) {
	results, err := simulate(seed)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("bounds", func(t *testing.T) {
		// Every algorithm that promises a bound keeps it on every shape.
		for i := range results {
			r := &results[i]
			if r.policy.bound == nil {
				continue
			}
			bound := r.policy.bound(limit, maxCost(r.outcomes))
			if got := r.stats().maxPerPeriod; got > bound {
				t.Errorf("%s on %s admitted %d in one period, more than its bound %d", r.policy.name, r.shape.name, got, bound)
			}
		}
	})

	t.Run("fixed window admits twice its quota across a boundary", func(t *testing.T) {
		// 25 requests on each side of the boundary: the window before it
		// and the window after it each admit Events, within 200 ms.
		if got := find(t, results, "fixed-window", "boundary").stats().maxPerPeriod; got != 2*limit.Events {
			t.Errorf("fixed window admitted at most %d in one period on the boundary traffic, want 2×%d", got, limit.Events)
		}
		// The others stay near Events: the buckets at Burst plus what
		// refills, the sliding window at Events give or take its
		// even-spread assumption.
		for _, name := range []string{"token-bucket", "gcra", "sliding-window", "leaky-bucket"} {
			if got := find(t, results, name, "boundary").stats().maxPerPeriod; got > limit.Events+limit.Events/10 {
				t.Errorf("%s admitted %d in one period on the boundary traffic, want about %d at most", name, got, limit.Events)
			}
		}
	})

	t.Run("the shaper delays, within its maximum, and refuses nothing below its rate", func(t *testing.T) {
		for i := range results {
			r := &results[i]
			if r.policy.name != "leaky-bucket" {
				continue
			}
			s := r.stats()
			if s.maxDelay > shaperMaxDelay {
				t.Errorf("leaky bucket on %s delayed a request %v, more than its maximum %v", r.shape.name, s.maxDelay, shaperMaxDelay)
			}
			if r.shape.name == "steady-below" && s.refused != 0 {
				t.Errorf("leaky bucket refused %d requests of traffic below its rate", s.refused)
			}
			if r.shape.name == "steady-above" && (s.refused == 0 || s.maxDelay < shaperMaxDelay-limit.Interval()) {
				t.Errorf("leaky bucket above its rate refused %d and delayed at most %v, want refusals once the queue is %v long", s.refused, s.maxDelay, shaperMaxDelay)
			}
		}
		for i := range results {
			r := &results[i]
			if r.policy.name != "leaky-bucket" && r.stats().delayed != 0 {
				t.Errorf("%s on %s delayed requests; only the shaper should", r.policy.name, r.shape.name)
			}
		}
	})

	t.Run("warm-up starts slower than the token bucket", func(t *testing.T) {
		// The cold start's load begins at 1 s; compare its first second.
		first := func(name string) int {
			n := 0
			for _, o := range find(t, results, name, "cold-start").outcomes {
				if o.allowed && o.at >= time.Second && o.at < 2*time.Second {
					n++
				}
			}
			return n
		}
		warm, bucket := first("warm-up"), first("token-bucket")
		if warm >= bucket {
			t.Errorf("in the cold start's first second warm-up admitted %d, token bucket %d; want fewer", warm, bucket)
		}
		// Cold, it admits one request per Interval × cold factor (3):
		// at most 1 s / 150 ms + 1 of them.
		if most := int(time.Second/(3*limit.Interval())) + 1; warm > most {
			t.Errorf("warm-up admitted %d in its first cold second, want at most %d", warm, most)
		}
	})

	t.Run("overdraft lets costly requests through", func(t *testing.T) {
		costly := func(name string) (admitted int) {
			for _, o := range find(t, results, name, "mixed-cost").outcomes {
				if o.allowed && o.cost > 1 {
					admitted++
				}
			}
			return admitted
		}
		if plain, over := costly("token-bucket"), costly("token-bucket-overdraft"); over <= plain {
			t.Errorf("the token bucket admitted %d costly requests with overdraft, %d without; want more with", over, plain)
		}
	})

	t.Run("deterministic", func(t *testing.T) {
		again, err := simulate(seed)
		if err != nil {
			t.Fatal(err)
		}
		for i := range results {
			if a, b := results[i].stats(), again[i].stats(); a != b {
				t.Errorf("%s on %s: %+v, then %+v", results[i].policy.name, results[i].shape.name, a, b)
			}
		}
	})
}

// TestMaxInWindow checks the sliding maximum against a brute force over
// every window start at a whole millisecond.
func TestMaxInWindow(t *testing.T) {
	ms := time.Millisecond
	outs := []outcome{
		{request: request{at: 0, cost: 1}, allowed: true},
		{request: request{at: 100 * ms, cost: 2}, allowed: true},
		{request: request{at: 900 * ms, cost: 1}, allowed: true, delay: 150 * ms}, // proceeds at 1050 ms
		{request: request{at: 999 * ms, cost: 3}, allowed: true},
		{request: request{at: 1099 * ms, cost: 1}, allowed: true},
		{request: request{at: 2099 * ms, cost: 4}, allowed: true},
	}
	brute := 0
	for start := -time.Second; start <= 3*time.Second; start += ms {
		sum := 0
		for _, o := range outs {
			if at := o.at + o.delay; at >= start && at < start+time.Second {
				sum += o.cost
			}
		}
		brute = max(brute, sum)
	}
	// The busiest window is [100 ms, 1100 ms): 2+3+1+1; the half-open end
	// keeps 2099 ms out of the window from 1099 ms.
	if got := maxInWindow(outs, time.Second); got != brute || got != 7 {
		t.Errorf("maxInWindow = %d, brute force %d, want 7", got, brute)
	}
}

// TestDefaultDir: run from this folder (as go test does), the default
// output is this folder's charts, the same place as from the module root.
func TestDefaultDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := defaultDir(), filepath.Join(wd, "charts"); got != want {
		t.Errorf("defaultDir() = %s, want %s", got, want)
	}
}

// TestComparisonLegible: the comparison chart keeps its legend out of the
// panels, in a column of its own that names every policy and the limit
// once; its time axes end with the traffic (no empty stretch left for a
// legend); the cold start's small per-bin counts get a label on every
// level; and its text is set at the sizes chosen to stay legible scaled
// down.
func TestComparisonLegible(t *testing.T) {
	results, err := simulate(seed)
	if err != nil {
		t.Fatal(err)
	}
	grid, legend := comparisonChart(results, "boundary", "cold-start")
	texts := func(drawTo func(draw.Canvas)) (out []string) {
		var rec recorder.Canvas
		drawTo(draw.NewCanvas(&rec, 10*vg.Inch, 10*vg.Inch))
		for _, a := range rec.Actions {
			if s, ok := a.(*recorder.FillString); ok {
				out = append(out, s.String)
			}
		}
		return out
	}
	if legend == nil {
		t.Fatal("no legend column")
	}
	want := []string{"limit: 20 per 1s"}
	for _, p := range policies {
		want = append(want, p.name)
	}
	if got := texts(legend.Draw); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("legend column %q, want %q", got, want)
	}
	for i, row := range grid {
		for j, p := range row {
			if got := texts(p.Legend.Draw); len(got) != 0 {
				t.Errorf("panel %d,%d carries a legend over its lines: %q", i, j, got)
			}
			if p.X.Max != 5 {
				t.Errorf("panel %d,%d: time axis to %gs, want it to end with the traffic at 5s", i, j, p.X.Max)
			}
			if p.Title.TextStyle.Font.Size < vg.Points(titleSize) || p.Y.Tick.Label.Font.Size < vg.Points(tickSize) || p.Y.Label.TextStyle.Font.Size < vg.Points(labelSize) {
				t.Errorf("panel %d,%d: text smaller than chosen", i, j)
			}
		}
	}
	cold := grid[1][0]
	var labels []string
	for _, tk := range cold.Y.Tick.Marker.Ticks(0, 6) {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, " "); got != "0 1 2 3 4 5 6" {
		t.Errorf("cold start per-bin labels %q, want every count from 0 to 6", got)
	}
	var steps []string
	for _, tk := range (countTicks{}).Ticks(0, 40) {
		steps = append(steps, tk.Label)
	}
	if got := strings.Join(steps, " "); got != "0 10 20 30 40" {
		t.Errorf("labels up to 40: %q", got)
	}
}
