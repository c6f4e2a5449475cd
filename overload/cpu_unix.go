//go:build unix

package overload

import "syscall"

// processCPUTime returns the CPU time this process has used, user and
// system, in nanoseconds (microsecond resolution on Linux).
func processCPUTime() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}
