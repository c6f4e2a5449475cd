// Package benchwork holds the workloads and the reference "floor" that
// floodgate's benchmarks share: core's own (core/bench_test.go) and the
// separate module that measures floodgate against its peers (benchmarks/).
// Both must run the same keys, the same Zipf sequence and the same floor, or
// their numbers could not be compared.
package benchwork
