// Package yamlpos is what packages rules and rlsconfig share in reading a
// YAML file: [Read], which decodes its one document and finds the line of
// a decoding error ([Line]), the [Error] that names the file, line and
// field of every problem, and helpers for the nodes both walk.
package yamlpos

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// One decodes the one YAML document data holds: io.EOF when there is
// none. When data holds a second document, One returns the first with the
// line where the second starts, for the caller to refuse it with its own
// reason; second is 0 otherwise.
func One(data []byte) (doc *yaml.Node, second int, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = new(yaml.Node)
	if err := dec.Decode(doc); err != nil {
		return nil, 0, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return doc, extra.Line, nil
	} else if !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return doc, 0, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Line returns the line (1-based) of data where err, an error decode gave
// on data, is, and err's message without the decoder's own line.
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
func Line(data []byte, err error, decode func([]byte) error) (int, string) {
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
		return len(lines), msg
	}
	same := func(k int) bool {
		err := decode(bytes.Join(lines[:k], nil))
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
	return k, msg
}
