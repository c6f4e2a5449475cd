package rlsstats

import "time"

// Counts are one rule's counter increments for one descriptor of a call,
// as envoyproxy/ratelimit counts them. OverLimitWithLocalCache counts the
// hits of the descriptors the local cache of refused keys refused
// (LOCAL_CACHE_SIZE_IN_BYTES), which OverLimit counts too.
type Counts struct {
	TotalHits, OverLimit, NearLimit, WithinLimit, ShadowMode uint64
	OverLimitWithLocalCache                                  uint64
}

// Sink takes the service's counts. Its methods are called on every call's
// path, from many goroutines: they must be safe for concurrent use and
// must not block.
type Sink interface {
	// Add counts c for the rule whose stats key is key: the domain and
	// the rule's key path, dot-separated ("domain.key1_value1.key2").
	Add(key string, c Counts)
	// Request counts a call of method ("ShouldRateLimit") that took d.
	Request(method string, d time.Duration)
	// Error counts a call the failure mode answered because the store
	// failed ("redis_error") or that failed otherwise ("service_error").
	Error(kind string)
	// ConfigLoad counts a configuration load: ok when it found no error.
	ConfigLoad(ok bool)
}

// Tee is a Sink that gives everything to each of its sinks.
type Tee []Sink

// Add gives c to every sink.
func (t Tee) Add(key string, c Counts) {
	for _, s := range t {
		s.Add(key, c)
	}
}

// Request gives the call to every sink.
func (t Tee) Request(method string, d time.Duration) {
	for _, s := range t {
		s.Request(method, d)
	}
}

// Error gives the error to every sink.
func (t Tee) Error(kind string) {
	for _, s := range t {
		s.Error(kind)
	}
}

// ConfigLoad gives the load to every sink.
func (t Tee) ConfigLoad(ok bool) {
	for _, s := range t {
		s.ConfigLoad(ok)
	}
}
