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

// slot is the Cluster hash slot of the Redis key rkey, as Redis computes
// it: CRC16 (XMODEM) modulo 16384 of the hash tag, the bytes between the
// first '{' and the first '}' after it when there are any.
func slot(rkey string) uint16 {
	if i := strings.IndexByte(rkey, '{'); i >= 0 {
		if j := strings.IndexByte(rkey[i+1:], '}'); j > 0 {
			rkey = rkey[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(rkey); i++ {
		crc ^= uint16(rkey[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}
