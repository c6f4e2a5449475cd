package rigchart_test

import (
	"fmt"
	"math"
	"strings"

	"github.com/floodgate/floodgate/benchmarks/internal/rigchart"
)

// The rig writes its sweep like this; a run with nothing answered has
// no p99, an empty field. SweepCharts then draws one chart per transport.
func ExampleWriteSweep() {
	rows := []rigchart.SweepRow{
		{Transport: "http", Protection: "none", Load: 2, Offered: 950, Timeout: 100, P50: math.NaN(), P99: math.NaN(), P99Ratio: math.NaN()},
		{Transport: "http", Protection: "static", Load: 2, Offered: 960, Goodput: 64.5, Shed: 75.4, P50: 3.7, P99: 10.3, P99Ratio: 2.7},
	}
	var b strings.Builder
	if err := rigchart.WriteSweep(&b, rows); err != nil {
		panic(err)
	}
	fmt.Print(strings.ReplaceAll(b.String(), "\t", "|")) // tabs shown as |
	for name := range rigchart.SweepCharts(rows) {
		fmt.Println(name)
	}
	// Output:
	// transport|protection|load|offered_per_s|goodput_pct|shed_pct|timeout_pct|p50_ms|p99_ms|p99_x_unloaded
	// http|none|2|950|0|0|100|||
	// http|static|2|960|64.5|75.4|0|3.7|10.3|2.7
	// overload-rig-http.svg
}
