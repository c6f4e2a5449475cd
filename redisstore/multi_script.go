package redisstore

import (
	"fmt"
	"strings"

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
	var src strings.Builder
	src.WriteString(top + "local algs = {}\n")
	for _, files := range multiFiles {
		fmt.Fprintf(&src, "algs['%s'] = function(KEYS, ARGV, redis)\n%send\n", fnID(files), source(files...))
	}
	src.WriteString(head + body)
	s := newScript(src.String())

	common, _ := split("common.lua")
	var lib strings.Builder
	fmt.Fprintf(&lib, "#!lua name=%s\n%s%slocal algs = {}\n", libMark, common, top)
	for _, files := range multiFiles {
		lib.WriteString("do\n")
		section(&lib, fmt.Sprintf("algs['%s']", fnID(files)), files)
		lib.WriteString("end\n")
	}
	fmt.Fprintf(&lib, "redis.register_function{function_name='%s_multi', callback=function(KEYS, ARGV)\n%send}\n", libMark, body)
	s.lib = newLibrary(lib.String())
	s.fn = s.lib.fn("multi")
	return s
}
