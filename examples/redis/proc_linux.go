//go:build linux

package main

import "syscall"

// sysProcAttr puts redis-server in a process group of its own, so that a
// Ctrl-C in the terminal reaches only this program, which stops the servers
// and then Redis, in that order; and has the kernel kill it if this program
// dies without stopping it (SIGKILL, a crash).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
