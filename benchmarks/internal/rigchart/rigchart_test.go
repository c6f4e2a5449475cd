package rigchart

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// polylines returns the points of each polyline of an SVG, in order.
func polylines(svg []byte) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<polyline points="([^"]*)"`).FindAllSubmatch(svg, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func TestNiceAxis(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		want axis
	}{
		{[]float64{0.8, 2, 5, 10}, axis{lo: 0, hi: 10, step: 2}},
		{[]float64{37, 12}, axis{lo: 0, hi: 40, step: 10}},
		{[]float64{11.9}, axis{lo: 0, hi: 15, step: 5}},
		{[]float64{-3, 4}, axis{lo: -4, hi: 4, step: 2}},
		{[]float64{math.NaN(), 0}, axis{lo: 0, hi: 1, step: 0.2}},
		{nil, axis{lo: 0, hi: 1, step: 0.2}},
	} {
		if got := niceAxis(c.vs); got != c.want {
			t.Errorf("niceAxis(%v) = %+v, want %+v", c.vs, got, c.want)
		}
	}
	if got, want := niceAxis([]float64{10}).ticks(), []float64{0, 2, 4, 6, 8, 10}; !slices.Equal(got, want) {
		t.Errorf("ticks %v, want %v", got, want)
	}
	la := logAxis([]float64{0, 3, 140, math.NaN()})
	if la.lo != 1 || la.hi != 1000 {
		t.Errorf("logAxis: %+v, want 1 to 1000", la)
	}
	if got, want := la.ticks(), []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}; !slices.Equal(got, want) {
		t.Errorf("log ticks %v, want %v", got, want)
	}
}

func TestSVGPoints(t *testing.T) {
	// The plot area runs from x 60 to 444 and from y 276 (bottom) to 34.
	svg := SVG("t", nil, []Panel{{Series: []Series{{Name: "a", X: []float64{0, 5, 10}, Y: []float64{0, 50, 100}}}}})
	if got, want := polylines(svg), []string{"60.0,276.0 252.0,155.0 444.0,34.0"}; !slices.Equal(got, want) {
		t.Errorf("linear: %q, want %q", got, want)
	}
	// On a log axis from 1 to 100, 10 is halfway; 0 is a gap, and a lone
	// point is a dot.
	svg = SVG("t", nil, []Panel{{LogY: true, Series: []Series{{Name: "a", X: []float64{0, 2, 4, 6, 8, 10}, Y: []float64{1, 10, 0, 100, math.NaN(), 50}}}}})
	if got, want := polylines(svg), []string{"60.0,276.0 136.8,155.0"}; !slices.Equal(got, want) {
		t.Errorf("log: %q, want %q", got, want)
	}
	for _, dot := range []string{`cx="290.4" cy="34.0"`, `cx="444.0" cy="70.4"`} {
		if !bytes.Contains(svg, []byte(dot)) {
			t.Errorf("no lone point at %s in\n%s", dot, svg)
		}
	}
}

func TestSVGColours(t *testing.T) {
	// A name keeps its place in the palette whether or not the panels show
	// it, and only the names shown are in the legend.
	p := Panel{Series: []Series{{Name: "b", X: []float64{0, 1}, Y: []float64{0, 1}}, {Name: "extra", X: []float64{0, 1}, Y: []float64{1, 1}, Dashed: true}}}
	svg := string(SVG("t", []string{"a", "b"}, []Panel{p}))
	for _, want := range []string{`stroke="` + palette[1] + `" stroke-width="2"/>`, `stroke="` + palette[2] + `" stroke-width="2" stroke-dasharray="6,4"/>`, ">b</text>", ">extra</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s in\n%s", want, svg)
		}
	}
	if strings.Contains(svg, ">a</text>") {
		t.Error("a has no series but is in the legend")
	}
}

func TestTSVRoundTrip(t *testing.T) {
	sweep := []SweepRow{
		{"http", "none", 2, 950, 0, 0, 100, math.NaN(), math.NaN(), math.NaN()},
		{"grpc-unary", "static", 0.8, 380.5, 61.25, 27, 0, 2.85, 5.32, 1.33},
	}
	var b bytes.Buffer
	if err := WriteSweep(&b, sweep); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(b.String(), "\n")[1], "http\tnone\t2\t950\t0\t0\t100\t\t\t"; got != want {
		t.Errorf("a row with no p99: %q, want %q", got, want)
	}
	got, err := ReadSweep(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[1], sweep[1]) || !math.IsNaN(got[0].P99) || got[0].Timeout != 100 {
		t.Errorf("read back %+v, want %+v", got, sweep)
	}
	change := []ChangeRow{{"http", "floodgate-adaptive", 0.1, 1, 12, 740, 300, 400, 372}, {"http", "none", 6, 2, math.NaN(), 700, 0, 0, 186}}
	b.Reset()
	if err := WriteChange(&b, change); err != nil {
		t.Fatal(err)
	}
	back, err := ReadChange(&b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0] != change[0] || !math.IsNaN(back[1].Limit) || back[1].Capacity != 186 {
		t.Errorf("read back %+v, want %+v", back, change)
	}
	for _, bad := range []string{"", "x\ty\n", SweepHeader + "\nhttp\tnone\t2\n", SweepHeader + "\nhttp\tnone\ttwo\t1\t1\t1\t1\t1\t1\t1\n"} {
		if _, err := ReadSweep(strings.NewReader(bad)); err == nil || !strings.HasPrefix(err.Error(), "rigchart: ") {
			t.Errorf("ReadSweep(%q): %v, want a rigchart error", bad, err)
		}
	}
}

func TestCharts(t *testing.T) {
	sweep := []SweepRow{
		{"http", "none", 1, 0, 90, 0, 0, 3, 40, 10},
		{"http", "guard", 1, 0, 95, 5, 0, 3, 8, 2},
		{"http", "none", 2, 0, 0, 0, 100, 0, math.NaN(), math.NaN()},
		{"http", "guard", 2, 0, 98, 50, 0, 3, 10, 2.5},
		{"grpc-unary", "guard", 1, 0, 99, 0, 0, 3, 8, 2},
	}
	charts := SweepCharts(sweep)
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range charts {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"overload-rig-grpc-unary.svg", "overload-rig-http.svg"}) {
		t.Fatalf("sweep charts %v", got)
	}
	// The loads on 0..2 (x = 60 + 192 × load). Goodput on 0..100 (y =
	// 276 - 2.42 × %), then the capacity at 100 %; the p99s on log 1..100
	// ms (121 a decade): none's is a lone dot (nothing answered at 2×),
	// guard's a line, then the unloaded p99 (40 / 10 = 4 ms).
	want := []string{
		"252.0,58.2 444.0,276.0", "252.0,46.1 444.0,38.8", "252.0,34.0 444.0,34.0",
		"252.0,166.7 444.0,155.0", "252.0,203.2 444.0,203.2",
	}
	if got := polylines(charts["overload-rig-http.svg"]); !slices.Equal(got, want) {
		t.Errorf("http chart: %q, want %q", got, want)
	}
	// guard is the second protection in the rows: the same colour on
	// both transports' charts.
	for name, c := range charts {
		if !bytes.Contains(c, []byte(`fill="`+palette[1]+`"`)) {
			t.Errorf("%s: guard is not drawn in %s", name, palette[1])
		}
	}
	change := []ChangeRow{
		{"http", "none", 0, 1, math.NaN(), 10, 10, 0, 100},
		{"http", "none", 0.1, 2, math.NaN(), 10, 10, 0, 50},
		{"http", "guard", 0, 1, 10, 10, 10, 0, 100},
		{"http", "guard", 0.1, 2, 5, 10, 10, 0, 50},
	}
	c := ChangeCharts(change)["overload-rig-change-http.svg"]
	if !bytes.Contains(c, []byte("the capacity ÷ 2 at 0.1 s")) {
		t.Errorf("the change is not in the title:\n%s", c)
	}
	// The simulation's file: the work doubles and comes back; both are
	// marked and told.
	if _, parts := changes(append(change, ChangeRow{"http", "none", 0.2, 1, math.NaN(), 10, 10, 0, 100}), "http", "none"); !slices.Equal(parts, []string{"÷ 2 at 0.1 s", "back at 0.2 s"}) {
		t.Errorf("changes told as %q", parts)
	}
	// guard's limit alone (none has no limit), from 10 to 5 on log 1..10;
	// then both goodputs and the capacity, 100 then 50 on 0..100.
	if got, want := polylines(c), []string{"60.0,34.0 444.0,106.8", "60.0,251.8 444.0,251.8", "60.0,251.8 444.0,251.8", "60.0,34.0 444.0,155.0"}; !slices.Equal(got, want) {
		t.Errorf("change chart: %q, want %q", got, want)
	}
}

func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	sweep, change := filepath.Join(dir, "s.tsv"), filepath.Join(dir, "c.tsv")
	var b bytes.Buffer
	if err := WriteSweep(&b, []SweepRow{{"http", "none", 1, 0, 90, 0, 0, 3, 40, 10}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sweep, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteChange(&b, []ChangeRow{{"grpc-stream", "none", 0, 1, math.NaN(), 10, 10, 0, 100}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(change, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	wrote, err := WriteAll(sweep, change, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "overload-rig-change-grpc-stream.svg"), filepath.Join(dir, "overload-rig-http.svg")}
	if !slices.Equal(wrote, want) {
		t.Errorf("wrote %v, want %v", wrote, want)
	}
	for _, f := range want {
		if b, err := os.ReadFile(f); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
			t.Errorf("%s: %v, %.20q", f, err, b)
		}
	}
	if _, err := WriteAll(change, "", dir); err == nil {
		t.Error("a change file read as a sweep: no error")
	}
}

func TestSmooth(t *testing.T) {
	got := Smooth([]float64{10, 20, math.NaN(), 40, 50, 60}, 1)
	want := []float64{15, 15, 30, 45, 50, 55}
	if !slices.Equal(got, want) {
		t.Errorf("Smooth = %v, want %v", got, want)
	}
}
