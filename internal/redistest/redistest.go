package redistest

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// RequireEnv names the environment variable that turns a missing
// redis-server (or redis-cli, for a cluster) from a skip into a failure.
// CI sets it to 1 so that Redis tests cannot silently stop running.
const RequireEnv = "FLOODGATE_REQUIRE_REDIS"

const installHint = "install it (Debian: apt-get install redis-server redis-tools)"

// Require returns the path of redis-server. When it is not in PATH, Require
// skips the test, or fails it if [RequireEnv] is set to 1.
func Require(t testing.TB) string {
	t.Helper()
	return requireTool(t, "redis-server")
}

func requireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if required() {
		t.Fatalf("redistest: %s not found in PATH and %s=%s requires it; %s", name, RequireEnv, os.Getenv(RequireEnv), installHint)
	}
	t.Skipf("redistest: %s not found in PATH; %s, or set %s=1 to fail instead of skipping", name, installHint, RequireEnv)
	return ""
}

func required() bool {
	ok, _ := strconv.ParseBool(os.Getenv(RequireEnv))
	return ok
}

// SkipShort skips t under go test -short, saying that it needs what, so
// that -short leaves out the tests that wait seconds in real time: a
// Cluster's start, a failover, an outage. Without -short they all run, as
// in CI.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short leaves out the tests that need %s; run without -short", what)
	}
}
