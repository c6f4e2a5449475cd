//go:build !linux

package redistest

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal; the servers
// are stopped by t.Cleanup only.
func sysProcAttr() *syscall.SysProcAttr { return nil }
