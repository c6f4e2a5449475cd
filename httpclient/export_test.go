package httpclient

// The test hooks, for the tests of package httpclient_test.
var (
	WithRand  = withRand
	WithSleep = withSleep
	WithClock = withClock
)
