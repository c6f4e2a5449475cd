package rlsconfig

import "time"

// withDebounce sets how long Watch waits for changes to settle.
func withDebounce(d time.Duration) Option {
	return func(o *options) { o.debounce = d }
}
