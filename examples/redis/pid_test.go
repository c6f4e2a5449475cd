package main

import "github.com/floodgate/floodgate/internal/redisproc"

// serverPID asks the Redis at addr for its process id (INFO server).
func serverPID(addr string) (int, error) { return redisproc.PID(addr, "") }
