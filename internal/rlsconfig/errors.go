package rlsconfig

import "github.com/floodgate/floodgate/internal/yamlpos"

// Error is what is wrong with a configuration file: the file, the line
// (1-based; 0 when the error concerns the whole file), the field, as a
// path from the top ("descriptors[1].rate_limit.unit"), and why. It reads
// as rules.Error does; it is not that type because this package sits below
// rules, and rules.Error is public; both format through yamlpos.Message.
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
