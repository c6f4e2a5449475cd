// Package redistest starts real Redis servers for tests: a single server
// ([Start]), a cluster of three masters or of one holding every slot
// ([StartCluster], [WithMasters]), and a master with one replica watched by
// a sentinel ([StartSentinel]). Each server runs as its own redis-server
// process on a free 127.0.0.1 port, in a directory from
// t.TempDir, without persistence unless [WithPersistence] asks for it, and
// is stopped in t.Cleanup, so nothing outlives the test, even a failing one.
// On Linux the kernel also kills the servers if the test binary dies before
// its cleanups run (go test -timeout, a crash).
//
// A test that needs Redis reads:
//
//	func TestStore(t *testing.T) {
//		srv := redistest.Start(t, redistest.WithPassword("s3cret"))
//		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: srv.Password(), ContextTimeoutEnabled: true})
//		...
//		srv.Kill()    // the backend fails
//		...
//		srv.Restart() // and comes back on the same address
//	}
//
// Without redis-server in PATH the test is skipped with a message saying how
// to install it. CI sets FLOODGATE_REQUIRE_REDIS=1 ([RequireEnv]), which
// turns that skip into a failure, so Redis tests cannot silently stop
// running.
//
// Under go test -short, [StartCluster] and [StartSentinel] skip the test
// ([SkipShort]): a Cluster accepts writes two seconds after it starts, and
// Sentinel tests wait for failovers. Tests that wait seconds in real time
// for other reasons call SkipShort themselves. Without -short, as in CI,
// everything runs. [Main] lets a package's parallel tests, which mostly
// wait on Redis, run more at once than one per CPU.
//
// Every wait is bounded: a server that does not answer PING within 10 s, a
// cluster that does not reach cluster_state:ok, a failover that does not
// happen, fail the test with the server's log tail.
package redistest
