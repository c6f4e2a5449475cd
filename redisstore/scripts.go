package redisstore

import (
	"embed"
	"fmt"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/core"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// One script per algorithm: the shared prelude, the window helpers for the
// window algorithms, then the algorithm. Each is a function of one library
// (functions.go), run with FCALL on a server that has Functions; on one
// that has not, it is run with EVALSHA, and sent once with EVAL when the
// server answers NOSCRIPT (see script in eval.go). Every function an EVAL
// script defines is made again on each call (Lua closures), so each script
// holds only the ones it uses; the library makes them once.
var sources = map[core.Algorithm][]string{
	core.TokenBucket:   {"common.lua", "tokenbucket.lua"},
	core.GCRA:          {"common.lua", "gcra.lua"},
	core.FixedWindow:   {"common.lua", "windows.lua", "fixedwindow.lua"},
	core.SlidingWindow: {"common.lua", "windows.lua", "slidingwindow.lua"},
	core.SlidingLog:    {"common.lua", "slidinglog.lua"},
	core.LeakyBucket:   {"common.lua", "leakybucket.lua"},
	core.WarmUp:        {"common.lua", "warmup.lua"},
	core.Concurrency:   {"concurrency.lua"},
}

// quotaSources are the scripts of limiters made WithLocalQuota: the
// algorithm's, with quota.lua after common.lua.
var quotaSources = map[core.Algorithm][]string{
	core.TokenBucket: {"common.lua", "quota.lua", "tokenbucket.lua"},
	core.GCRA:        {"common.lua", "quota.lua", "gcra.lua"},
	core.FixedWindow: {"common.lua", "windows.lua", "quota.lua", "fixedwindow.lua"},
}

// subWindowsSource is SlidingWindow's script with sub-windows.
var subWindowsSource = []string{"common.lua", "windows.lua", "subwindows.lua"}

var (
	scripts, quotaScripts, subWindowsScript = func() (map[core.Algorithm]*script, map[core.Algorithm]*script, *script) {
		all, files := map[string]*script{}, map[string][]string{}
		add := func(names []string) *script {
			s := newScript(source(names...))
			all[fnID(names)], files[fnID(names)] = s, names
			return s
		}
		m, q := map[core.Algorithm]*script{}, map[core.Algorithm]*script{}
		for alg, names := range sources {
			m[alg] = add(names)
		}
		for alg, names := range quotaSources {
			q[alg] = add(names)
		}
		sub := add(subWindowsSource)
		mainLibrary(all, files)
		return m, q, sub
	}()
)

// source is the named files of lua/, one after the other.
func source(names ...string) string {
	var src []byte
	for _, name := range names {
		b, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			panic(err)
		}
		src = append(append(src, b...), '\n')
	}
	return string(src)
}

// maxSpan is the longest span a limit may have on Redis: the scripts' Lua
// numbers are doubles, exact below 2⁵³, and every instant they handle lies
// within two spans and a second of now.
const maxSpan = time.Duration(1<<52) - 2*time.Second

// maxWindow is the longest period of a fixed window on Redis: one longer
// than maxSpan is whole seconds, and the script works in seconds and
// answers its reset in whole microseconds, exact as doubles below 2⁵⁶ ns
// (see lua/windows.lua). It is longer than a year, envoyproxy/ratelimit's
// longest unit, so that every unit works with floodgate's default.
const maxWindow = time.Duration(1 << 56)

// params returns the algorithm's script parameters for l and o's settings
// (ARGV[4...]), and the largest cost it can ever admit, or an error saying
// what to change.
func params(alg core.Algorithm, l core.Limit, o *options) ([]string, int, error) {
	switch alg {
	case core.LeakyBucket:
		return leakyParams(l, o)
	case core.WarmUp:
		return warmUpParams(l, o)
	}
	span := l.Period
	if alg == core.TokenBucket || alg == core.GCRA {
		// Limit.Validate keeps this product far from overflowing.
		span = l.Interval() * time.Duration(l.EffectiveBurst())
	}
	switch {
	case span <= maxSpan:
	case alg != core.FixedWindow:
		return nil, 0, fmt.Errorf("redisstore: limit %s spans %v; on Redis a limit of %v may span at most %v (%s), since Lua numbers are doubles: shorten the period, lower the burst, or use core.FixedWindow, which takes periods of whole seconds up to %v (%s)", l, span, alg, maxSpan, "about 52 days", maxWindow, "about 834 days")
	case l.Period%time.Second != 0 || l.Period > maxWindow:
		return nil, 0, fmt.Errorf("redisstore: limit %s: on Redis a fixed window longer than %v (%s) must be whole seconds and at most %v (%s), since Lua numbers are doubles: round the period to seconds, or shorten it", l, maxSpan, "about 52 days", maxWindow, "about 834 days")
	}
	if o.overdraft && span > maxSpan/2 {
		// In debt by up to a burst, a bucket takes up to two spans to fill.
		return nil, 0, fmt.Errorf("redisstore: limit %s spans %v; with WithOverdraft a limit may span at most %v (%s) on Redis, since a bucket in debt takes up to two spans to fill: shorten the period or lower the burst", l, span, maxSpan/2, "about 26 days")
	}
	switch alg {
	case core.TokenBucket:
		b := newBucket(l, o.overdraft)
		lend := "0"
		if o.overdraft {
			lend = "1"
		}
		// The script computes the slack and the search's reach as b does.
		return []string{ftoa(b.rate), ftoa(b.burst), lend}, l.EffectiveBurst(), nil
	case core.GCRA:
		// The lead (last) is the span: a theoretical arrival is never
		// further ahead.
		t := int64(l.Interval())
		return []string{strconv.FormatInt(t, 10), strconv.FormatInt(int64(span), 10), strconv.FormatInt(int64(span), 10)}, l.EffectiveBurst(), nil
	case core.FixedWindow, core.SlidingWindow, core.SlidingLog:
		return []string{strconv.FormatInt(int64(l.Period), 10), strconv.Itoa(l.Events)}, l.Events, nil
	case core.Concurrency:
		// The lease TTL follows, added by New.
		return []string{strconv.Itoa(l.Events), strconv.FormatInt(int64(l.Period), 10)}, l.Events, nil
	}
	return nil, 0, fmt.Errorf("redisstore: unknown algorithm %d; use core.TokenBucket, core.GCRA, core.FixedWindow, core.SlidingWindow, core.SlidingLog, core.LeakyBucket, core.WarmUp or core.Concurrency", int(alg))
}

// logParams checks the log's settings against l as Limit.Validate does
// (SubWindows must divide the period; the entries a key may need must
// be within MaxEntries) and returns the extra script parameter of
// sub-windows, the sub-window's length in ns.
func logParams(o *options, l core.Limit) ([]string, error) {
	maxEntries := o.maxEntries
	if maxEntries == 0 {
		maxEntries = core.DefaultMaxEntries
	}
	need := int64(l.Events)
	if o.subWindows == 0 {
		if need > int64(maxEntries) {
			return nil, fmt.Errorf("redisstore: core.SlidingLog: %d events per period need up to %d log entries per key, more than MaxEntries allows (%d); raise the cap with WithMaxEntries(%d) or use core.SlidingWindow (with sub-windows for a closer count)", l.Events, need, maxEntries, need)
		}
		return nil, nil
	}
	n := int64(o.subWindows)
	if int64(l.Period)%n != 0 {
		return nil, fmt.Errorf("redisstore: SubWindows %d: the period %v is not a whole number of nanoseconds times %d; pick a number of sub-windows that divides it", n, l.Period, n)
	}
	if need = min(need, n); need > int64(maxEntries) {
		return nil, fmt.Errorf("redisstore: SubWindows %d: %d events in %d sub-windows need up to %d entries per key, more than MaxEntries allows (%d); raise the cap with WithMaxEntries(%d) or use fewer sub-windows", n, l.Events, n, need, maxEntries, need)
	}
	return []string{strconv.FormatInt(int64(l.Period)/n, 10)}, nil
}

// anyLead is the lead (see lua/common.lua) of a Dynamic's GCRA, leaky
// bucket and warm-up keys: the furthest ahead of now any limit Redis
// accepts writes an instant, since a key whose limit changed keeps the
// state its old limit wrote (as core's SetLimit does). Their own limit's
// lead would cut the debt a key kept from a slower or larger tier.
var anyLead = strconv.FormatInt(int64(maxSpan), 10)

// hasLead reports whether alg's script parameters end with a lead: the
// algorithms whose stored instant may lie ahead of now by a limit's span.
// The others' instants are never after now, whatever the limit.
func hasLead(alg core.Algorithm) bool {
	return alg == core.GCRA || alg == core.LeakyBucket || alg == core.WarmUp
}

// ftoa formats f so that Lua's tonumber reads back the same double.
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// algTag names the algorithm in keys.
func algTag(alg core.Algorithm) string {
	switch alg {
	case core.TokenBucket:
		return "tb"
	case core.GCRA:
		return "gcra"
	case core.FixedWindow:
		return "fw"
	case core.Concurrency:
		return "cc"
	case core.SlidingLog:
		return "sl"
	case core.LeakyBucket:
		return "lb"
	case core.WarmUp:
		return "wu"
	}
	return "sw"
}

// compile returns the script that decides under o's algorithm and
// settings, the algorithm's tag in keys, the script's parameters for l
// (ARGV[4...]) and the largest cost l can ever admit, or an error saying
// what to change.
func compile(o *options, l core.Limit) (*script, string, []string, int, error) {
	p, maxCost, err := params(o.algorithm, l, o)
	if err != nil {
		return nil, "", nil, 0, err
	}
	if o.algorithm == core.SlidingLog || o.subWindows != 0 {
		extra, err := logParams(o, l)
		if err != nil {
			return nil, "", nil, 0, err
		}
		p = append(p, extra...)
	}
	if o.quota != nil && o.algorithm == core.GCRA {
		p[len(p)-1] = aheadLead(l.Interval()*time.Duration(l.EffectiveBurst()), *o.quota, l)
	}
	script, tag := scriptOf(o)
	return script, tag, p, maxCost, nil
}

// scriptOf returns the script that decides under o's algorithm and
// settings, and the algorithm's tag in keys.
func scriptOf(o *options) (*script, string) {
	if o.subWindows != 0 {
		// Its own encoding: never the two-window counter's key.
		return subWindowsScript, fmt.Sprintf("sw%d", o.subWindows)
	}
	if s := quotaScripts[o.algorithm]; s != nil && o.quota != nil {
		return s, algTag(o.algorithm)
	}
	return scripts[o.algorithm], algTag(o.algorithm)
}

// sourceOf returns the files of lua/ whose script decides under o's
// algorithm and settings.
func sourceOf(o *options) []string {
	if o.subWindows != 0 {
		return subWindowsSource
	}
	if s := quotaSources[o.algorithm]; s != nil && o.quota != nil {
		return s
	}
	return sources[o.algorithm]
}

// keyTag names an algorithm (its tag) and a limit in keys: the tag, then
// the limit's parameters.
func keyTag(tag string, l core.Limit) string {
	return fmt.Sprintf("%s:%d/%d:%d", tag, l.Events, int64(l.Period), l.EffectiveBurst())
}
