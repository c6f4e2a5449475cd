package yamlpos

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is what is wrong with a YAML file: the file, the line (1-based; 0
// when the error concerns the whole file), the field, as a path from the
// top ("rules[1].limit"), and why. rules.Error and rlsconfig.Error are
// this type.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error formats e as "file:line: field: why", the form compilers use, so
// that editors can jump to it; the line is left out when it is 0, the
// field when it is empty.
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

// At is the *Error of file at n (line 0 for a nil n) in field.
func At(file string, n *yaml.Node, field, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: file, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

// Read decodes data, the contents of file, as one YAML document and
// returns its top node. A file longer than maxSize bytes, an empty one
// (needs says what it should hold: "a rules: list") and one the decoder
// refuses are an *Error, the last at the line of the problem. When data
// holds a second document, Read returns the first with the line where
// the second starts, for the caller to refuse with its own reason; second
// is 0 otherwise.
func Read(file string, data []byte, maxSize int, needs string) (top *yaml.Node, second int, err error) {
	if len(data) > maxSize {
		return nil, 0, &Error{File: file, Err: fmt.Errorf("the file is %d bytes, more than %d", len(data), maxSize)}
	}
	empty := &Error{File: file, Err: errors.New("the file is empty; it needs " + needs)}
	doc, second, err := One(data)
	switch {
	case errors.Is(err, io.EOF):
		return nil, 0, empty
	case err != nil:
		line, msg := Line(data, err, func(b []byte) error {
			_, _, err := One(b)
			return err
		})
		return nil, 0, &Error{File: file, Line: line, Err: errors.New(msg)}
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, 0, empty
		}
		doc = doc.Content[0]
	}
	return doc, second, nil
}

// Resolve follows an alias to the node it names.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// Join is the path of field inside parent ("rules[0]" and "limit" make
// "rules[0].limit"); field alone at the top.
func Join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// IsNull reports whether n is nothing: absent, or YAML's null.
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// KindName says what n is, for errors that say what was expected
// instead: "a mapping", "a list", a single value quoted, or "nothing".
func KindName(n *yaml.Node) string {
	switch {
	case IsNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}
