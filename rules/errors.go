package rules

import "github.com/floodgate/floodgate/internal/yamlpos"

// Error is what is wrong with a rules file, as a *Error: its fields are
//
//	File  string // the file
//	Line  int    // the line, 1-based; 0 when the error concerns the whole file
//	Field string // the field, as a path from the top ("rules[1].limit")
//	Err   error  // why
//
// Its Error method formats it as "file:line: field: why", the form
// compilers use, so that editors can jump to it, and Unwrap returns Err,
// so that errors.Is sees core's errors. The rate-limit service's
// configuration files report their errors with the same type.
type Error = yamlpos.Error
