// Command rigcharts redraws the overload rig's charts from its TSV files
// (TestOverloadRig writes them, and its charts too when given
// -overloadrig.charts): from benchmarks/,
//
//	go run ./cmd/rigcharts -sweep results/<run>-sweep.tsv -change results/<run>-change.tsv -out ../docs/images
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/floodgate/floodgate/benchmarks/internal/rigchart"
)

func main() {
	sweep := flag.String("sweep", "", "the load sweep's TSV file")
	change := flag.String("change", "", "the capacity-change run's TSV file")
	out := flag.String("out", ".", "the directory to write the SVG files into")
	flag.Parse()
	if *sweep == "" && *change == "" {
		fmt.Fprintln(os.Stderr, "rigcharts: give -sweep, -change or both")
		os.Exit(2)
	}
	wrote, err := rigchart.WriteAll(*sweep, *change, *out)
	for _, f := range wrote {
		fmt.Println(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rigcharts:", err)
		os.Exit(1)
	}
}
