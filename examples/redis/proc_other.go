//go:build !linux

package main

import "syscall"

// sysProcAttr leaves redis-server in this program's process group: a
// Ctrl-C in the terminal reaches both, and the program still stops it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
