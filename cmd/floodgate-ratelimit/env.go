package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// secret names the variables whose values must not be printed:
// credentials, and headers, which may carry a token.
func secret(name string) bool {
	return strings.HasSuffix(name, "_AUTH") || strings.HasSuffix(name, "_HEADERS")
}

// opt is a setting that may be unset: set says whether the environment
// gave it, which matters where unset keeps floodgate's behaviour and set
// asks for upstream's.
type opt[T any] struct {
	v   T
	set bool
}

// env reads upstream's variables, keeping every refusal. A variable is
// set when it holds a non-empty value: manifests render "" for a value
// they leave out, and upstream's defaults are its own.
type env struct {
	look lookupEnv
	errs []error
	read map[string]bool // every name looked up, for TestUpstreamNames
}

func newEnv(look lookupEnv) *env { return &env{look: look, read: map[string]bool{}} }

// str returns name's value.
func (e *env) str(name string) opt[string] {
	e.read[name] = true
	v, ok := e.look(name)
	return opt[string]{v, ok && v != ""}
}

// refuse records that name's value cannot be honoured: reason says why,
// and what to use instead.
func (e *env) refuse(name, reason string, args ...any) {
	v := e.str(name)
	shown := name
	if v.set && !secret(name) {
		parts := strings.Split(v.v, ",")
		for i, p := range parts {
			parts[i] = redactURL(p) // a redis:// URL's credentials
		}
		shown = name + "=" + strings.Join(parts, ",")
	}
	e.errs = append(e.errs, fmt.Errorf("%s: %s", shown, fmt.Sprintf(reason, args...)))
}

// boolean reads name as upstream does (strconv.ParseBool).
func (e *env) boolean(name string) opt[bool] {
	s := e.str(name)
	if !s.set {
		return opt[bool]{}
	}
	b, err := strconv.ParseBool(s.v)
	if err != nil {
		e.refuse(name, "not a boolean; use true or false")
		return opt[bool]{}
	}
	return opt[bool]{b, true}
}

// integer reads name as a whole number from lo to hi.
func (e *env) integer(name string, lo, hi int64) opt[int] {
	s := e.str(name)
	if !s.set {
		return opt[int]{}
	}
	n, err := strconv.ParseInt(s.v, 0, 64)
	if err != nil || n < lo || n > hi {
		e.refuse(name, "use a whole number from %d to %d", lo, hi)
		return opt[int]{}
	}
	return opt[int]{int(n), true}
}

// duration reads name as a Go duration ("10s", "1h"), at least lo.
func (e *env) duration(name string, lo time.Duration) opt[time.Duration] {
	s := e.str(name)
	if !s.set {
		return opt[time.Duration]{}
	}
	d, err := time.ParseDuration(s.v)
	if err != nil || d < lo {
		e.refuse(name, "use a duration of at least %v, such as 10s or 1m", lo)
		return opt[time.Duration]{}
	}
	return opt[time.Duration]{d, true}
}

// float reads name as a number from lo to hi.
func (e *env) float(name string, lo, hi float64) opt[float64] {
	s := e.str(name)
	if !s.set {
		return opt[float64]{}
	}
	f, err := strconv.ParseFloat(s.v, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		e.refuse(name, "use a number from %g to %g", lo, hi)
		return opt[float64]{}
	}
	return opt[float64]{f, true}
}

// pairs reads name as upstream's map form, "k1:v1,k2:v2".
func (e *env) pairs(name string) opt[map[string]string] {
	s := e.str(name)
	if !s.set {
		return opt[map[string]string]{}
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s.v, ",") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || k == "" {
			e.refuse(name, "%q is not key:value; use key1:value1,key2:value2", kv)
			return opt[map[string]string]{}
		}
		m[k] = v
	}
	return opt[map[string]string]{m, true}
}

// port reads name as a TCP port.
func (e *env) port(name string) opt[int] { return e.integer(name, 0, 65535) }

// oneOf reads name as one of choices, in any case, and returns it in
// lower case.
func (e *env) oneOf(name string, choices ...string) opt[string] {
	s := e.str(name)
	if !s.set {
		return s
	}
	for _, c := range choices {
		if strings.EqualFold(s.v, c) {
			return opt[string]{strings.ToLower(c), true}
		}
	}
	e.refuse(name, "use %s", strings.Join(choices, " or "))
	return opt[string]{}
}

func durationOr(d opt[time.Duration], def time.Duration) time.Duration {
	if d.set {
		return d.v
	}
	return def
}

// header reads name as an HTTP header field name, def when unset.
func (e *env) header(name, def string) string {
	h := e.str(name)
	if !h.set {
		return def
	}
	if !validToken(h.v) {
		e.refuse(name, "not a header field name (letters, digits and !#$%%&'*+-.^_`|~)")
		return def
	}
	return h.v
}

// validToken reports whether s is an HTTP token, as header names are.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// sortedErrs returns errs' messages in name order, each once.
func sortedErrs(errs []error) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	slices.Sort(out)
	return slices.Compact(out)
}
