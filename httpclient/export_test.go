package httpclient

// The test hooks, for the tests of package httpclient_test.
var (
	WithRand  = withRand
	WithSleep = withSleep
	WithClock = withClock
)

// The RateLimit field parsers and their results, for the parser tests.
var (
	ParseRateLimit       = parseRateLimit
	ParseRateLimitPolicy = parseRateLimitPolicy
)

type (
	Quota  = quota
	Policy = policy
)
