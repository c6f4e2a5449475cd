package rules

import (
	"bytes"
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Error is what is wrong with a rules file: the file, the line (1-based; 0
// when the error concerns the whole file) and the field, as a path from the
// top ("rules[1].limit"), and why.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error formats e as "file:line: field: why", the form compilers use, so
// that editors can jump to it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause, so that errors.Is sees core's errors.
func (e *Error) Unwrap() error { return e.Err }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns an error of the YAML decoder on data into an *Error at
// the line where the problem is.
//
// The decoder's own "line N" cannot be used as it is: it is the line where
// the construct around the problem starts (the list or mapping being
// parsed) rather than the problem's, and it counts from 0 for parser
// errors but from 1 for scanner errors, and it is left out when that line
// is the first. It is a lower bound, though: the problem is on that line or
// after it. So the line is found by decoding prefixes of data, a whole
// number of lines long, from the bound on: the problem's line is the first
// at which a prefix fails with the same message. The decoder reads a
// document front to back, so a prefix that stops before the problem
// either decodes or fails for another reason (such as its end inside a
// quoted string). A search doubling its step, then bisecting, keeps it to
// a few dozen decodes of a file of the largest size.
func yamlError(file string, data []byte, err error) error {
	msg, lo := err.Error(), 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		lo, _ = strconv.Atoi(m[1])
		lo = max(lo, 1)
		msg = "yaml: " + m[2]
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if lo > len(lines) {
		return &Error{File: file, Line: len(lines), Err: errors.New(msg)}
	}
	same := func(k int) bool {
		_, err := decode(bytes.Join(lines[:k], nil))
		if err == nil {
			return false
		}
		got := err.Error()
		if m := yamlLine.FindStringSubmatch(got); m != nil {
			got = "yaml: " + m[2]
		}
		return got == msg
	}
	// Double the step from lo until a prefix fails alike; the whole file
	// does, by definition, so the search ends there at the latest.
	last, k := lo-1, lo
	for k < len(lines) && !same(k) {
		last, k = k, min(len(lines), lo+2*(k-lo+1)-1)
	}
	// The first such prefix is in (last, k]: bisect.
	for last+1 < k {
		mid := last + (k-last)/2
		if same(mid) {
			k = mid
		} else {
			last = mid
		}
	}
	return &Error{File: file, Line: k, Err: errors.New(msg)}
}
