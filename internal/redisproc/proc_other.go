//go:build !linux

package redisproc

import "syscall"

// SysProcAttr returns nil outside Linux: there is no parent-death signal,
// so the caller's own stop is all, and the child stays in the program's
// process group, where a Ctrl-C in the terminal reaches both.
func SysProcAttr(ownGroup bool) *syscall.SysProcAttr { return nil }
