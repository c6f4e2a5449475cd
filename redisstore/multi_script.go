package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/core"
)

// multiFiles are the scripts of the algorithms a Multi decides, each a
// layer function of the multi script named by fnID of its files.
var multiFiles = [][]string{
	sources[core.TokenBucket], sources[core.GCRA], sources[core.FixedWindow],
	sources[core.SlidingWindow], subWindowsSource, sources[core.SlidingLog], sources[core.WarmUp],
}

// multiScript decides a Multi's items (lua/multi.lua): sent with EVAL, it
// holds every algorithm's whole script; its library holds each once.
var multiScript = newMultiScript()

func newMultiScript() *script {
	top, _, _ := strings.Cut(source("stack.lua"), "-- LAYERS --\n")
	head, body := split("multi.lua")
	common, _ := split("common.lua")
	windows, _ := split("windows.lua")
	var src strings.Builder
	src.WriteString(top + "local algs = {}\n")
	for _, files := range multiFiles {
		fmt.Fprintf(&src, "algs['%s'] = function(KEYS, ARGV, redis)\n%send\n", fnID(files), source(files...))
	}
	// multi.lua's head decides calls of fixed windows itself, with the
	// helpers of common.lua and windows.lua.
	src.WriteString(common + windows + head + body)
	s := newScript(src.String())

	var lib strings.Builder
	fmt.Fprintf(&lib, "#!lua name=%s\n%s%slocal algs = {}\n", libMark, common, top)
	for _, files := range multiFiles {
		lib.WriteString("do\n")
		section(&lib, fmt.Sprintf("algs['%s']", fnID(files)), files)
		lib.WriteString("end\n")
	}
	fmt.Fprintf(&lib, "%s%sredis.register_function{function_name='%s_multi', callback=function(KEYS, ARGV)\n%send}\n", windows, head, libMark, body)
	s.lib = newLibrary(lib.String())
	s.fn = s.lib.fn("multi")
	return s
}

// add appends item i, on the client key key, to g, in the short form if
// fw (every layer of the call a plain fixed window, see lua/multi.lua).
func (g *group) add(l *Limiter, i int, key string, cost int, ls []*multiLayer, fw bool) {
	if g.args == nil {
		g.args = make([]any, 2, 2+6*len(ls))
	}
	g.fw = fw
	g.items = append(g.items, i)
	g.args = append(g.args, small(cost), small(len(ls)))
	for _, ly := range ls {
		g.keys = append(g.keys, l.keyEnd(key, ly.end))
		if fw {
			g.args = append(g.args, ly.fwArgs...)
		} else {
			g.args = append(g.args, ly.args...)
		}
	}
}

// head sets the script's first two arguments: op, followed by a test's
// clock if one is set (else the script reads the server's TIME), and the
// TTL margin, drawn for the call with WithTTLJitter.
func (m *Multi) head(g *group, op any) {
	if g.fw && op == argAllow {
		op = argAllowFW
	} else if g.fw {
		op = argRefundFW
	}
	g.args[0] = op
	if t := m.l.testNow; t != nil {
		now := t.Now()
		g.args[0] = op.(string) + " " + strconv.FormatInt(now/int64(time.Second), 10) + " " + strconv.FormatInt(now%int64(time.Second), 10)
	}
	g.args[1] = m.l.margins.pick()
	g.cmd, g.res, g.err, g.refused = nil, nil, nil, false
}
