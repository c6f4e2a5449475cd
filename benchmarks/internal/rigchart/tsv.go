package rigchart

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// SweepRow is one run of the load sweep: a protection on a transport at
// an offered load. A p99 is NaN when nothing was answered.
type SweepRow struct {
	Transport, Protection string
	Load                  float64 // offered, in multiples of the capacity
	Offered               float64 // calls a second
	Goodput               float64 // % of the capacity answered within the SLO
	Shed, Timeout         float64 // % of the calls offered
	P50, P99              float64 // ms, of the answered calls
	P99Ratio              float64 // P99 / the unloaded p99
}

// SweepHeader is the first line of a sweep TSV file.
const SweepHeader = "transport\tprotection\tload\toffered_per_s\tgoodput_pct\tshed_pct\ttimeout_pct\tp50_ms\tp99_ms\tp99_x_unloaded"

// ChangeRow is 100 ms of the capacity-change run for one protection.
// Limit is NaN where the protection has none to read (or no sample fell
// in those 100 ms).
type ChangeRow struct {
	Transport, Protection string
	T                     float64 // s from the run's start to the start of the 100 ms
	Work                  float64 // the work per request, in multiples of the start's
	Limit                 float64 // the guard's limit on requests in flight
	Offered, Goodput      float64 // calls a second that arrived; answered within the SLO
	Shed                  float64 // calls a second shed
	Capacity              float64 // calls a second the server can serve at this work
}

// ChangeHeader is the first line of a capacity-change TSV file.
const ChangeHeader = "transport\tprotection\tt_s\twork\tlimit\toffered_per_s\tgoodput_per_s\tshed_per_s\tcapacity_per_s"

func num(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// WriteSweep writes rows as a TSV file with SweepHeader.
func WriteSweep(w io.Writer, rows []SweepRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, SweepHeader)
	for _, r := range rows {
		fmt.Fprintln(bw, strings.Join([]string{r.Transport, r.Protection, num(r.Load), num(r.Offered), num(r.Goodput),
			num(r.Shed), num(r.Timeout), num(r.P50), num(r.P99), num(r.P99Ratio)}, "\t"))
	}
	return bw.Flush()
}

// WriteChange writes rows as a TSV file with ChangeHeader.
func WriteChange(w io.Writer, rows []ChangeRow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ChangeHeader)
	for _, r := range rows {
		fmt.Fprintln(bw, strings.Join([]string{r.Transport, r.Protection, num(r.T), num(r.Work), num(r.Limit),
			num(r.Offered), num(r.Goodput), num(r.Shed), num(r.Capacity)}, "\t"))
	}
	return bw.Flush()
}

// readTSV returns the fields of each line after header, which must be
// the first line; an empty field reads as NaN.
func readTSV(r io.Reader, header string, each func(text []string, nums []float64)) error {
	sc := bufio.NewScanner(r)
	if !sc.Scan() || sc.Text() != header {
		return fmt.Errorf("rigchart: the first line is not %q", header)
	}
	want := len(strings.Split(header, "\t"))
	for line := 2; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != want {
			return fmt.Errorf("rigchart: line %d has %d fields, not %d", line, len(f), want)
		}
		nums := make([]float64, want)
		for i := 2; i < want; i++ {
			nums[i] = math.NaN()
			if f[i] == "" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("rigchart: line %d: %w", line, err)
			}
			nums[i] = v
		}
		each(f[:2], nums)
	}
	return sc.Err()
}

// ReadSweep reads a file WriteSweep wrote.
func ReadSweep(r io.Reader) ([]SweepRow, error) {
	var rows []SweepRow
	err := readTSV(r, SweepHeader, func(t []string, n []float64) {
		rows = append(rows, SweepRow{t[0], t[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9]})
	})
	return rows, err
}

// ReadChange reads a file WriteChange wrote.
func ReadChange(r io.Reader) ([]ChangeRow, error) {
	var rows []ChangeRow
	err := readTSV(r, ChangeHeader, func(t []string, n []float64) {
		rows = append(rows, ChangeRow{t[0], t[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8]})
	})
	return rows, err
}
