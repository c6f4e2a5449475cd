package rlsconfig

import "github.com/floodgate/floodgate/rules"

// Error is what is wrong with a configuration file: the file, the line
// (1-based; 0 when the error concerns the whole file), the field, as a
// path from the top ("descriptors[1].rate_limit.unit"), and why. It is the
// rules file's error (rules.Error), so that a tool reports both formats'
// errors alike: "file:line: field: why".
type Error = rules.Error
