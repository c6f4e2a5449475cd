package main

import (
	"expvar"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// debugEndpoints are what the debug listener (DEBUG_HOST, DEBUG_PORT)
// serves, as upstream's does, each with the line its index shows.
var debugEndpoints = []struct{ path, help string }{
	{"/debug/pprof/", "root of various pprof endpoints. hit for help."},
	{"/debug/pprof/profile", "CPU profiling endpoint"},
	{"/debug/pprof/trace", "trace endpoint"},
	{"/rlconfig", "print out the currently loaded configuration for debugging"},
	{"/stats", "print out stats"},
}

// debugMux serves the debug endpoints; /rlconfig prints the
// configuration in force.
func debugMux(current *atomic.Pointer[rlsconfig.Config]) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		expvar.Do(func(kv expvar.KeyValue) { fmt.Fprintf(w, "%s: %s\n", kv.Key, kv.Value) })
	})
	mux.HandleFunc("/rlconfig", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		dumpConfig(w, current.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		for _, e := range debugEndpoints {
			fmt.Fprintf(w, "%s: %s\n", e.path, e.help)
		}
	})
	return mux
}

// dumpConfig writes the rules of c, the configuration in force (nil:
// none yet), one a line in upstream's form ("key: unit=MINUTE
// requests_per_unit=5, shadow_mode: false, quota_mode: false"), and
// floodgate's own limits after it.
func dumpConfig(w io.Writer, c *rlsconfig.Config) {
	if c == nil {
		fmt.Fprintln(w, "no configuration loaded yet")
		return
	}
	for _, d := range c.Domains() {
		rules := slices.Clone(d.Rules())
		slices.SortFunc(rules, func(a, b *rlsconfig.Rule) int { return strings.Compare(a.FullKey, b.FullKey) })
		for _, r := range rules {
			fmt.Fprintf(w, "%s: unit=%s requests_per_unit=%d, shadow_mode: %t, quota_mode: %t%s\n",
				r.FullKey, strings.ToUpper(r.Unit.String()), r.RequestsPerUnit, r.ShadowMode, r.QuotaMode, extraLimits(r))
		}
	}
}

// extraLimits describes what floodgate's fields add to a rule's limit:
// an algorithm other than the fixed window, a burst, more limits.
func extraLimits(r *rlsconfig.Rule) string {
	if len(r.Limits) == 0 || len(r.Limits) == 1 && r.Limits[0].Algorithm == core.FixedWindow && r.Limits[0].Burst == 0 {
		return ""
	}
	var parts []string
	for _, l := range r.Limits {
		p := fmt.Sprintf("%d per %v %v", l.Events, l.Period, l.Algorithm)
		if l.Burst > 0 {
			p += fmt.Sprintf(" burst %d", l.Burst)
		}
		parts = append(parts, p)
	}
	return ", limits: " + strings.Join(parts, "; ")
}
