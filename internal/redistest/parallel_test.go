package redistest

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// TestRaiseParallel: the limit is raised from its default, but never
// over what the command line set, nor below the default.
func TestRaiseParallel(t *testing.T) {
	t.Parallel()
	procs := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name string
		args []string
		n    int
		want int
	}{
		{"default, raised", nil, procs + 6, procs + 6},
		{"default, n not above it", nil, procs, procs},
		{"default, n below it", nil, 1, procs},
		{"set on the command line", []string{"-test.parallel=3"}, procs + 6, 3},
		{"set to the default on the command line", []string{"-test.parallel=" + strconv.Itoa(procs)}, procs + 6, procs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			p := fs.Int(parallelFlag, procs, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			raiseParallel(fs, tc.n)
			if *p != tc.want {
				t.Errorf("raiseParallel(%v, %d): -test.parallel %d, want %d", tc.args, tc.n, *p, tc.want)
			}
		})
	}
	// A flag set without the flag (not a test binary's) is left alone.
	fs := flag.NewFlagSet("other", flag.ContinueOnError)
	raiseParallel(fs, procs+6)
	if fs.Lookup(parallelFlag) != nil {
		t.Error("raiseParallel defined -test.parallel")
	}
}
