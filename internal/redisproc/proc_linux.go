//go:build linux

package redisproc

import "syscall"

// SysProcAttr returns the attributes [Start] gives redis-server, for other
// helper processes (redis-cli) that must not outlive their program either.
// On Linux the kernel kills the child with SIGKILL when the thread that
// started it exits, which, for a Go program, means when the program dies
// before stopping it. With ownGroup the child also gets a process group of
// its own, so that a Ctrl-C in the terminal reaches only the program, which
// can then stop its servers in order.
func SysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
}
