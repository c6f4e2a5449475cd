// Package httpmwtest holds the module's helpers for testing and
// benchmarking HTTP code built on httpmw, such as the Gin and Echo
// adapters (internal: test support, not API): a reusable response
// writer for benchmarks, requests from distinct clients, a limiter whose
// store is down, and a byte-for-byte comparison of two responses.
//
//	func BenchmarkRouter(b *testing.B) {
//		reqs := httpmwtest.Peers(b, 1024, "GET", "/items", keyfunc.MustClientIP())
//		httpmwtest.Benchmark(b, router, reqs, http.StatusOK)
//	}
package httpmwtest
