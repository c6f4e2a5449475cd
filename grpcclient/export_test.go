package grpcclient

// The test hooks, for the tests of package grpcclient_test.
var (
	WithRand  = withRand
	WithSleep = withSleep
)
