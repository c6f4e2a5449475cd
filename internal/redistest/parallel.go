package redistest

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/floodgate/floodgate/internal/coretest"
)

// parallelFlag is the testing package's flag behind go test -parallel.
const parallelFlag = "test.parallel"

// Main runs m's tests and exits with their status, as a TestMain does,
// letting up to n parallel tests run at once instead of one per CPU,
// unless the command line sets -parallel itself or the race detector is
// on:
//
//	func TestMain(m *testing.M) { redistest.Main(m, 8) }
//
// It is for packages whose tests mostly wait on Redis rather than compute:
// a Cluster accepts writes only two seconds after it starts, and outages,
// timeouts and leases run in real time. Tests that must run alone (those
// that count allocations, or load every CPU) stay out of t.Parallel, and
// so never overlap the others. The race detector makes every test use
// several times the CPU, so that n tests at once would starve those that
// check wall-clock bounds: under it the limit stays one per CPU.
func Main(m *testing.M, n int) {
	flag.Parse()
	if !coretest.Race {
		raiseParallel(flag.CommandLine, n)
	}
	os.Exit(m.Run())
}

// raiseParallel sets fs's -test.parallel to n when the command line did not
// set it and n is above the default, one per CPU.
func raiseParallel(fs *flag.FlagSet, n int) {
	if fs.Lookup(parallelFlag) == nil || n <= runtime.GOMAXPROCS(0) {
		return
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == parallelFlag })
	if !set {
		fs.Set(parallelFlag, strconv.Itoa(n))
	}
}
