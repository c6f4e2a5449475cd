package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// classes is the traffic's mix of priorities: the X-Priority header each
// sends and its share of the requests.
var classes = []struct {
	name, header string
	share        float64
}{
	{"critical", "critical", 0.2},
	{"normal", "", 0.5},
	{"sheddable", "sheddable", 0.3},
}

// clients is how many clients (X-Client) the requests come from, in turn.
const clients = 4

// patience is how long a client waits for an answer before it gives up.
const patience = time.Second

// result is one request's outcome.
type result struct {
	class      int
	status     int // 0: no answer (the client gave up, or the connection failed)
	latency    time.Duration
	retryAfter bool
}

// drive sends requests to url at cfg.load times the service's capacity
// for cfg.run, open-loop (Poisson arrivals from cfg.seed), and returns
// their outcomes once every one has ended.
func drive(ctx context.Context, url string, cfg config) []result {
	rate := cfg.load * cfg.capacity()
	rng := rand.New(rand.NewPCG(cfg.seed, 0))
	client := &http.Client{Timeout: patience, Transport: &http.Transport{MaxIdleConnsPerHost: 4096}}
	defer client.CloseIdleConnections()
	var (
		mu sync.Mutex
		rs []result
		wg sync.WaitGroup
	)
	start := time.Now()
	at := time.Duration(0)
	for i := 0; ctx.Err() == nil; i++ {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		if at >= cfg.run {
			break
		}
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d) // a late wake-up is caught up: the schedule is absolute
		}
		c := pick(rng.Float64())
		id := "client-" + strconv.Itoa(i%clients)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send(ctx, client, url, c, id)
			mu.Lock()
			rs = append(rs, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rs
}

// pick is the class of a request drawn u in [0, 1).
func pick(u float64) int {
	for i, c := range classes {
		if u < c.share {
			return i
		}
		u -= c.share
	}
	return len(classes) - 1
}

// send makes one request of class c from client id.
func send(ctx context.Context, client *http.Client, url string, c int, id string) result {
	r := result{class: c}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return r
	}
	req.Header.Set("X-Client", id)
	if h := classes[c].header; h != "" {
		req.Header.Set("X-Priority", h)
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	r.latency = time.Since(t0)
	if err != nil {
		return r
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.status = resp.StatusCode
	r.retryAfter = resp.Header.Get("Retry-After") != ""
	return r
}

// counts is what happened to some requests.
type counts struct {
	offered, inTime, shed int
}

// row is a phase's figures.
type row struct {
	name string
	all  counts
	// class is all, by class (classes' order).
	class []counts
	// shedBare is the sheds answered without a Retry-After.
	shedBare int
	// unanswered is the requests the client gave up on (or that failed),
	// and other is those answered neither 200 nor 503.
	unanswered, other int
	// goodput is the requests served in time a second, as a share of the
	// service's capacity.
	goodput float64
	// p99 is the 99th percentile latency of the requests answered 200.
	p99 time.Duration
	// limits is the guard's limit every limitEvery, if there is one,
	// and baseline its baseline latency at the end.
	limits   []int
	baseline time.Duration
}

// tally sums a phase's results.
func tally(name string, cfg config, rs []result) row {
	r := row{name: name, class: make([]counts, len(classes))}
	var ok []time.Duration
	for _, x := range rs {
		c := &r.class[x.class]
		r.all.offered++
		c.offered++
		switch x.status {
		case http.StatusOK:
			ok = append(ok, x.latency)
			if x.latency <= cfg.slo() {
				r.all.inTime++
				c.inTime++
			}
		case http.StatusServiceUnavailable:
			r.all.shed++
			c.shed++
			if !x.retryAfter {
				r.shedBare++
			}
		case 0:
			r.unanswered++
		default:
			r.other++
		}
	}
	r.goodput = float64(r.all.inTime) / cfg.run.Seconds() / cfg.capacity()
	if len(ok) > 0 {
		slices.Sort(ok)
		r.p99 = ok[(len(ok)*99)/100]
	}
	return r
}

// printRows prints the phases' figures as a table.
func printRows(w io.Writer, cfg config, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\trequests\tin time\tgoodput\tp99 of 200s\tshed (503)\tno answer\t")
	for _, c := range classes {
		fmt.Fprintf(tw, "%s in time\t", c.name)
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f %%\t%v\t%s\t%d\t", r.name, r.all.offered, share(r.all.inTime, r.all.offered),
			100*r.goodput, r.p99.Round(time.Millisecond), share(r.all.shed, r.all.offered), r.unanswered)
		for _, c := range r.class {
			fmt.Fprintf(tw, "%s\t", share(c.inTime, c.offered))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, r := range rows {
		if len(r.limits) > 0 {
			fmt.Fprintf(w, "\n%s's limit every %v (the service has %d workers): %v\nits baseline latency at the end: %v\n",
				r.name, limitEvery, cfg.workers, strings.Trim(fmt.Sprint(r.limits), "[]"), r.baseline.Round(100*time.Microsecond))
		}
	}
}

// share is n of total and its percentage.
func share(n, total int) string {
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%.0f %%)", n, 100*float64(n)/float64(total))
}
