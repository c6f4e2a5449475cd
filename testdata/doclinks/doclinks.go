// Package doclinks holds doc links for TestDocLinksCatches: [Counter],
// [Counter.Add], [strings.Cut] and [fmt] resolve.
package doclinks

import "strings"

// Counter counts. [Gauge.Reset] does not resolve: there is no Gauge.
// Nor does [strings.NoSuchFunc], and [strings.Builder.Len] does.
// [redisstore.Stack] names a package this one does not import; [n] is text;
// [Counter.Reset] is declared in a test file only.
type Counter struct {
	// N is the count so far, as [Counter.Add] leaves it.
	N int
}

// Add adds n: [Counter.N] is a field that resolves and
// [Counter.value], lowercase, not a link at all.
func (c *Counter) Add(n int) { c.N += n; _ = strings.Cut }
