//go:build !unix

package overload

// processCPUTime has no reader on this system: NewCPU reads a cgroup or
// fails, and BBRConfig.CPU takes a signal of the caller's own.
var processCPUTime func() (int64, error)
