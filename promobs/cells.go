package promobs

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/obsreg"
)

// Two cores that add to the same counter pass its cache line back and
// forth, which costs more than the rest of an observation. So each series
// keeps its counts in several cells (stripes), each on cache lines of its
// own, and an event adds to one cell picked at random; a scrape sums the
// cells.
const (
	// stripes is how many cells a series has: a power of two, a few
	// times the cores that commonly observe at once.
	stripes = 8
	// lineWords is the unit a cell is padded to, in 8-byte words: 128
	// bytes, as x86 processors fetch cache lines in adjacent pairs.
	lineWords = 16
)

// The counts in a cell, as offsets in words.
const (
	wordRequests   = 0                            // [numOutcomes][2]: by outcome, then shadow
	wordOverflow   = wordRequests + 2*numOutcomes // overflow decisions
	wordLeased     = wordOverflow + 1             // decisions from local quota leases
	wordStoreErrs  = wordLeased + 1               // [numFailures]: by failure mode
	wordLatencySum = wordStoreErrs + numFailures  // the latencies' sum in nanoseconds
	wordLatency    = wordLatencySum + 1           // the latency buckets: one per bound, and one above them all
	// Then, from wordLatency+len(latency bounds)+1: the holds' sum in
	// nanoseconds and the hold buckets, laid out as the latency's.
)

// stripedCounts is a series' cells.
type stripedCounts struct {
	words  []atomic.Uint64 // stripes cells of stride words, the first on a line's start
	stride int
}

// newStripedCounts makes stripes cells of at least n words each.
func newStripedCounts(n int) stripedCounts {
	stride := (n + lineWords - 1) / lineWords * lineWords
	all := make([]atomic.Uint64, stripes*stride+lineWords-1)
	// Start at the first word on a line boundary; the heap does not move.
	skip := 0
	if r := uintptr(unsafe.Pointer(&all[0])) % (8 * lineWords); r != 0 {
		skip = int(8*lineWords-r) / 8
	}
	return stripedCounts{words: all[skip : skip+stripes*stride], stride: stride}
}

// cell returns the cell an event adds to.
func (c *stripedCounts) cell() []atomic.Uint64 {
	i := int(rand.Uint32()&(stripes-1)) * c.stride
	return c.words[i : i+c.stride : i+c.stride]
}

// sum adds word w of every cell. A scrape that runs during observations
// may see some of an event's additions and not yet others, which the
// next scrape corrects.
func (c *stripedCounts) sum(w int) uint64 {
	var n uint64
	for i := w; i < len(c.words); i += c.stride {
		n += c.words[i].Load()
	}
	return n
}

// cellCollector exports one metric family from the series' cells, as
// const metrics made at scrape time. A series appears once it has counted
// something, as a CounterVec's child appears on first use.
type cellCollector struct {
	desc   *prometheus.Desc
	series *obsreg.Series[series]
	// emit sends the metrics of the series.
	emit func(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series)
	// slow, if not nil, holds further metrics of the same family: the
	// label values the cells have no place for.
	slow prometheus.Collector
}

// Describe implements prometheus.Collector.
func (c *cellCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *cellCollector) Collect(ch chan<- prometheus.Metric) {
	c.emit(ch, c.desc, c.series.Map())
	if c.slow != nil {
		c.slow.Collect(ch)
	}
}

// emitRequests sends the requests counters of the series that counted
// some.
func emitRequests(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series) {
	for _, s := range m {
		for out := range numOutcomes {
			for shadow := range 2 {
				if n := s.counts.sum(wordRequests + 2*out + shadow); n > 0 {
					ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n),
						s.limit, s.transport, core.Outcome(out).String(), shadowLabel(shadow == 1))
				}
			}
		}
	}
}

// emitOverflow sends the overflow counters of the series that counted
// some.
func emitOverflow(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series) {
	for _, s := range m {
		if n := s.counts.sum(wordOverflow); n > 0 {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n), s.limit, s.transport)
		}
	}
}

// emitLeased sends the counters of decisions made from local quota leases
// of the series that counted some.
func emitLeased(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series) {
	for _, s := range m {
		if n := s.counts.sum(wordLeased); n > 0 {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n), s.limit, s.transport)
		}
	}
}

// emitStoreErrors sends the store errors by transport and failure mode
// only, adding those of the transport's series: a store error's event
// normally names no limit, but one that does must not make a second
// metric with the same labels.
func emitStoreErrors(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series) {
	byTransport := map[string]*[numFailures]uint64{}
	for _, s := range m {
		for f := range numFailures {
			n := s.counts.sum(wordStoreErrs + f)
			if n == 0 {
				continue
			}
			t := byTransport[s.transport]
			if t == nil {
				t = new([numFailures]uint64)
				byTransport[s.transport] = t
			}
			t[f] += n
		}
	}
	for transport, t := range byTransport {
		for f, n := range t {
			if n > 0 {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n),
					transport, core.FailureMode(f).String())
			}
		}
	}
}

// histogramEmitter returns the emit function of a histogram whose sum in
// nanoseconds is at word sumWord of a cell, followed by its buckets, whose
// upper bounds are seconds, and the bucket above them all.
func histogramEmitter(sumWord int, seconds []float64) func(chan<- prometheus.Metric, *prometheus.Desc, map[seriesKey]*series) {
	return func(ch chan<- prometheus.Metric, desc *prometheus.Desc, m map[seriesKey]*series) {
		for _, s := range m {
			cum := make(map[float64]uint64, len(seconds))
			var n uint64
			for i, b := range seconds {
				n += s.counts.sum(sumWord + 1 + i)
				cum[b] = n
			}
			n += s.counts.sum(sumWord + 1 + len(seconds))
			if n == 0 {
				continue
			}
			sum := float64(s.counts.sum(sumWord)) / 1e9
			ch <- prometheus.MustNewConstHistogram(desc, n, sum, cum, s.limit, s.transport)
		}
	}
}

// bucketsOf returns the finite bounds of buckets, in seconds and in
// nanoseconds.
func bucketsOf(buckets []float64) (seconds []float64, ns []int64) {
	for _, b := range buckets {
		if math.IsInf(b, +1) {
			break // the +Inf bucket is implicit
		}
		seconds = append(seconds, b)
		ns = append(ns, int64(math.Round(b*1e9)))
	}
	return seconds, ns
}

// observe adds a duration of ns nanoseconds to the histogram at word
// sumWord of cell c whose buckets' upper bounds are bounds.
func observe(c []atomic.Uint64, sumWord int, bounds []int64, ns int64) {
	i := 0
	for i < len(bounds) && ns > bounds[i] {
		i++
	}
	c[sumWord+1+i].Add(1)
	c[sumWord].Add(uint64(ns))
}
