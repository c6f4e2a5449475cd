//go:build linux

package redistest

import "syscall"

// sysProcAttr has the kernel kill a child when the test binary dies before
// its cleanups run (go test -timeout, a crash), so no server outlives the
// test run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
