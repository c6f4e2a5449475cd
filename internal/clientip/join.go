package clientip

import (
	"fmt"
	"strconv"
	"strings"
)

// JoinFuncs is keyfunc.Join for key functions of any request type R, so
// that keyfunc.Join and grpcmw.JoinKeys join keys with the same code and
// encoding. It returns a key function that calls every fn in order on the
// request and joins their keys with JoinParts. The first error from any fn
// is returned as it is; an empty key from fn i is an error matching
// ErrNoKey that names caller and i. fns is copied, so the caller may reuse
// its slice.
//
// caller is the exported function that calls JoinFuncs, qualified by its
// package ("keyfunc.Join", "grpcmw.JoinKeys"), so that panics and errors
// name the function the user called; "" stands for "keyfunc.JoinFuncs".
// JoinFuncs panics, with a message
// starting "<package>: <function>", if given no functions or a nil one: a
// programming error best found at startup.
func JoinFuncs[F ~func(R) (string, error), R any](caller string, fns ...F) F {
	pkg, name := splitCaller(caller)
	if len(fns) == 0 {
		panic(fmt.Sprintf("%s: %s needs at least one key function", pkg, name))
	}
	for i, fn := range fns {
		if fn == nil {
			panic(fmt.Sprintf("%s: %s: key function %d is nil", pkg, name, i))
		}
	}
	fns = append([]F(nil), fns...) // the caller may reuse its slice
	return func(r R) (string, error) {
		// Parts are gathered first so the result is built in one allocation.
		var small [4]string
		parts := small[:0]
		if len(fns) > len(small) {
			parts = make([]string, 0, len(fns))
		}
		for i, fn := range fns {
			k, err := fn(r)
			if err != nil {
				return "", err
			}
			if k == "" {
				return "", fmt.Errorf("%w: %s: key function %d returned an empty key", ErrNoKey, name, i)
			}
			parts = append(parts, k)
		}
		return JoinParts(parts...), nil
	}
}

// splitCaller splits "pkg.Func" for JoinFuncs' messages. A name without a
// package is taken to be keyfunc's.
func splitCaller(caller string) (pkg, name string) {
	if caller == "" {
		return "keyfunc", "JoinFuncs"
	}
	if i := strings.LastIndexByte(caller, '.'); i >= 0 {
		return caller[:i], caller[i+1:]
	}
	return "keyfunc", caller
}

// JoinParts writes parts in keyfunc.Join's encoding: each part as its
// length in decimal, a colon, and the part itself, so JoinParts("a:b", "c")
// and JoinParts("a", "b:c") differ. It does not reject empty parts
// (encoded "0:"); key functions should, as Join does.
func JoinParts(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p) + decimalLen(len(p)) + 1
	}
	var b strings.Builder
	b.Grow(n)
	var num [20]byte
	for _, p := range parts {
		b.Write(strconv.AppendInt(num[:0], int64(len(p)), 10))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

func decimalLen(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
