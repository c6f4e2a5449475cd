// Package obstest holds what the tests of the metrics observers (promobs,
// otelobs) share: the sheds they count by priority, and the check that
// counting them allocates nothing.
package obstest
