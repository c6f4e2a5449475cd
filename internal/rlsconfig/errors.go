package rlsconfig

import "github.com/floodgate/floodgate/internal/yamlpos"

// Error is what is wrong with a configuration file: the file, the line
// (1-based; 0 when the error concerns the whole file), the field, as a
// path from the top ("descriptors[1].rate_limit.unit"), and why. It is
// rules.Error, which this package, below rules, names through yamlpos.
type Error = yamlpos.Error
