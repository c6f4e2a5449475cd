package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// library is a Redis Functions library (Redis 7 and later) holding
// scripts as registered functions: FUNCTION LOAD sends it once per server,
// and each call is then an FCALL. Its heads (see lua/common.lua) run once,
// when the library loads, so the helpers a script defines are made once
// per server instead of on every call, as EVALSHA makes them. The name of
// the library and of each function holds a hash of the library's source,
// so two versions of this package on one server never run each other's
// code.
type library struct {
	name, src string
}

// libMark stands for the library's name in its source until the source,
// and so its hash, is known.
const libMark = "@LIB@"

// callMark ends a lua/ file's head (see lua/common.lua).
const callMark = "-- CALL --\n"

// newLibrary returns the library of src, whose libMark become its name.
func newLibrary(src string) *library {
	sum := sha1.Sum([]byte(src))
	name := "floodgate_" + hex.EncodeToString(sum[:8])
	return &library{name: name, src: strings.ReplaceAll(src, libMark, name)}
}

// fn names the library's function id.
func (lib *library) fn(id string) string { return lib.name + "_" + id }

// split returns a lua/ file's head and body.
func split(name string) (head, body string) {
	src := source(name)
	if h, b, ok := strings.Cut(src, callMark); ok {
		return h, b
	}
	return "", src
}

// section writes to w, inside a library's top level, the heads of the
// named files but common.lua's (the library's own, written once at its
// top), then fn: a function of (KEYS, ARGV, redis) running the files'
// bodies, as an EVAL of their source would run them.
func section(w *strings.Builder, fn string, names []string) {
	var bodies strings.Builder
	for _, name := range names {
		h, b := split(name)
		if name != "common.lua" {
			w.WriteString(h)
		}
		bodies.WriteString(b)
	}
	fmt.Fprintf(w, "%s = function(KEYS, ARGV, redis)\n%send\n", fn, bodies.String())
}

// fnID names in a library the script made of the files names.
func fnID(names []string) string {
	var parts []string
	for _, name := range names {
		if name != "common.lua" {
			parts = append(parts, strings.TrimSuffix(name, ".lua"))
		}
	}
	return strings.Join(parts, "_")
}

// register is the Lua that registers the function id, a callback calling
// run.
func register(id, run string) string {
	return fmt.Sprintf("redis.register_function{function_name='%s_%s', callback=function(keys, args)\n  return %s(keys, args, redis)\nend}\n", libMark, id, run)
}

// mainLibrary returns the library of every script of one algorithm (each
// its files), and sets each script's function in it.
func mainLibrary(all map[string]*script, files map[string][]string) *library {
	ids := make([]string, 0, len(files))
	for id := range files {
		ids = append(ids, id)
	}
	slices.Sort(ids) // the source, and so its hash, is the same in every process
	head, _ := split("common.lua")
	var src strings.Builder
	src.WriteString("#!lua name=" + libMark + "\n" + head)
	for _, id := range ids {
		src.WriteString("do\nlocal run\n")
		section(&src, "run", files[id])
		src.WriteString(register(id, "run") + "end\n")
	}
	lib := newLibrary(src.String())
	for id, s := range all {
		s.lib, s.fn = lib, lib.fn(id)
	}
	return lib
}

// stackLibrary returns the library of a stack whose layers' scripts are
// made of srcs (see stackScript), its function named "stack".
func stackLibrary(srcs [][]string, leased []bool, quota bool) *library {
	head, _ := split("common.lua")
	top, tail, _ := strings.Cut(source("stack.lua"), "-- LAYERS --\n")
	var src strings.Builder
	fmt.Fprintf(&src, "#!lua name=%s\nlocal quota = %v\n%slocal sections = {}\n", libMark, quota, head)
	seen := map[string]int{}
	for _, files := range srcs {
		id := fnID(files)
		if _, ok := seen[id]; ok {
			continue
		}
		seen[id] = len(seen) + 1
		src.WriteString("do\n")
		section(&src, fmt.Sprintf("sections[%d]", seen[id]), files)
		src.WriteString("end\n")
	}
	src.WriteString(top)
	for i, files := range srcs {
		fmt.Fprintf(&src, "layers[%d] = sections[%d]\n", i+1, seen[fnID(files)])
		if leased != nil && leased[i] {
			fmt.Fprintf(&src, "leased[%d] = true\n", i+1)
		}
	}
	fmt.Fprintf(&src, "redis.register_function{function_name='%s_stack', callback=function(KEYS, ARGV)\n%send}\n", libMark, tail)
	return newLibrary(src.String())
}

// loadable reports whether this package can load a library on c's
// servers: a single server's client, a failover's or a Cluster's, whose
// calls are then sent with FCALL first. A Ring's are sent with EVALSHA.
func loadable(c redis.UniversalClient) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient:
		return true
	}
	return false
}

// functions is what a route knows of its server's Functions.
type functions struct {
	off atomic.Bool // the server refused FUNCTION LOAD: EVALSHA from now on
	mu  sync.Mutex  // one load at a time
}

// loaded is the outcome of a round trip's library load, tried at most
// once per round trip.
type loaded int8

const (
	notTried loaded = iota
	loadedOK
	loadFailed
)

// load sends the Limiter's library to the server holding rkey, once per
// round trip (*ld), and reports whether the server now holds it. A server
// that answers FUNCTION LOAD with an error of its own (an unknown command,
// before Redis 7 or renamed; no permission; any other but that the library
// exists or that it cannot serve now) is sent EVALSHA from now on (r's
// functions are turned off); a failed round trip only fails this load.
func (l *Limiter) load(ctx context.Context, r *route, rkey string, ld *loaded) bool {
	if *ld == notTried {
		*ld = loadFailed
		if l.loadOn(ctx, r, rkey) {
			*ld = loadedOK
		}
	}
	return *ld == loadedOK
}

func (l *Limiter) loadOn(ctx context.Context, r *route, rkey string) bool {
	r.fn.mu.Lock()
	defer r.fn.mu.Unlock()
	if r.fn.off.Load() {
		return false
	}
	var node *redis.Client
	switch c := l.client.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, rkey)
		if err != nil {
			return false
		}
		node = n
	default:
		return false
	}
	err := node.FunctionLoad(ctx, l.script.lib.src).Err()
	var re redis.Error
	switch {
	case err == nil, redis.HasErrorPrefix(err, "Library") && strings.Contains(err.Error(), "already exists"):
		return true
	case errors.As(err, &re) && classify(ctx, ctx, err) == answered:
		r.fn.off.Store(true)
	}
	return false
}

// fnMissing reports whether err is a server's answer that the function
// called does not exist (never loaded, or lost to a restart, FLUSHALL,
// FUNCTION FLUSH or a failover): it did not run.
func fnMissing(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "Function not found")
}

// unknownCommand reports whether err is a server's answer that it has no
// such command (FCALL before Redis 7): nothing ran.
func unknownCommand(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "unknown command")
}
