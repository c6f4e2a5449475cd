package rules

import (
	"errors"

	"github.com/floodgate/floodgate/internal/yamlpos"
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
	return yamlpos.Message(e.File, e.Line, e.Field, e.Err)
}

// Unwrap returns the cause, so that errors.Is sees core's errors.
func (e *Error) Unwrap() error { return e.Err }

// yamlError turns an error of the YAML decoder on data into an *Error at
// the line where the problem is (see yamlpos.Line).
func yamlError(file string, data []byte, err error) error {
	line, msg := yamlpos.Line(data, err, func(b []byte) error {
		_, err := decode(b)
		return err
	})
	return &Error{File: file, Line: line, Err: errors.New(msg)}
}
