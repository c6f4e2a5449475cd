package redistest

import "github.com/floodgate/floodgate/internal/redisproc"

// dataConfig is the redis.conf of a data node (not a sentinel), after
// redisproc's own lines; extra comes before the lines of WithConfig, so
// those win.
func dataConfig(o options, extra ...string) []string {
	lines := []string{`save ""`}
	if o.persist {
		lines = append(lines, "appendonly yes", "appendfsync always")
	} else {
		lines = append(lines, "appendonly no")
	}
	if o.password != "" {
		lines = append(lines, "requirepass "+redisproc.Quote(o.password), "masterauth "+redisproc.Quote(o.password))
	}
	lines = append(lines, extra...)
	return append(lines, o.config...)
}
