package rlsstats

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxNames bounds the counter names a Statsd holds between flushes; the
// counts of names past it are added to "<domain>.overflow" rule names.
const maxNames = 20000

// Statsd sends the counts to a statsd server over TCP, as
// envoyproxy/ratelimit does (USE_STATSD, STATSD_HOST, STATSD_PORT,
// STATS_FLUSH_INTERVAL), under upstream's names:
//
//	ratelimit.service.rate_limit.<key>.total_hits (and over_limit, near_limit, within_limit, shadow_mode, over_limit_with_local_cache)
//	ratelimit_server.<method>.total_requests, ratelimit_server.<method>.response_time (ms)
//	ratelimit.service.call.should_rate_limit.<redis_error|service_error>
//	ratelimit.service.config_load_success, ratelimit.service.config_load_error
//
// Counters accumulate in memory and go every interval, each name once
// with its increase since the last flush; a server that cannot be reached
// loses that flush's counts (logged), never delays a call.
type Statsd struct {
	addr string
	log  *slog.Logger

	mu       sync.Mutex
	counters map[string]uint64
	timers   map[string][]float64 // milliseconds
	conn     net.Conn
}

// NewStatsd returns a Statsd for the server at addr (host:port) that
// flushes every interval until ctx ends, then once more.
func NewStatsd(ctx context.Context, addr string, interval time.Duration, log *slog.Logger) (*Statsd, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("rlsstats: statsd address %q: %w", addr, err)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("rlsstats: statsd flush interval %v: use a positive duration", interval)
	}
	s := &Statsd{addr: addr, log: log, counters: make(map[string]uint64), timers: make(map[string][]float64)}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				s.Flush()
				s.mu.Lock()
				if s.conn != nil {
					_ = s.conn.Close()
				}
				s.mu.Unlock()
				return
			case <-t.C:
				s.Flush()
			}
		}
	}()
	return s, nil
}

// Add counts c under the rule's names.
func (s *Statsd) Add(key string, c Counts) {
	key = sanitize(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.counters) >= maxNames {
		if _, ok := s.counters["ratelimit.service.rate_limit."+key+".total_hits"]; !ok {
			domain, _, _ := strings.Cut(key, ".")
			key = domain + ".overflow"
		}
	}
	p := "ratelimit.service.rate_limit." + key
	s.count(p+".total_hits", c.TotalHits)
	s.count(p+".over_limit", c.OverLimit)
	s.count(p+".near_limit", c.NearLimit)
	s.count(p+".within_limit", c.WithinLimit)
	s.count(p+".shadow_mode", c.ShadowMode)
	s.count(p+".over_limit_with_local_cache", c.OverLimitWithLocalCache)
}

// count adds n to name; s.mu is held.
func (s *Statsd) count(name string, n uint64) {
	if n > 0 {
		s.counters[name] += n
	}
}

// Request counts the call and times it.
func (s *Statsd) Request(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters["ratelimit_server."+method+".total_requests"]++
	name := "ratelimit_server." + method + ".response_time"
	if len(s.timers[name]) < maxNames {
		s.timers[name] = append(s.timers[name], float64(d.Microseconds())/1000)
	}
}

// Error counts a failed call.
func (s *Statsd) Error(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters["ratelimit.service.call.should_rate_limit."+kind]++
}

// ConfigLoad counts a configuration load.
func (s *Statsd) ConfigLoad(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.counters["ratelimit.service.config_load_success"]++
	} else {
		s.counters["ratelimit.service.config_load_error"]++
	}
}

// Flush sends what was counted since the last flush, in statsd's line
// format, names in order.
func (s *Statsd) Flush() {
	s.mu.Lock()
	counters, timers := s.counters, s.timers
	s.counters, s.timers = make(map[string]uint64, len(counters)), make(map[string][]float64, len(timers))
	conn := s.conn
	s.mu.Unlock()
	if len(counters) == 0 && len(timers) == 0 {
		return
	}
	var b strings.Builder
	for _, name := range sorted(counters) {
		fmt.Fprintf(&b, "%s:%d|c\n", name, counters[name])
	}
	for _, name := range sorted(timers) {
		for _, ms := range timers[name] {
			b.WriteString(name + ":" + strconv.FormatFloat(ms, 'f', -1, 64) + "|ms\n")
		}
	}
	if conn == nil {
		c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			s.log.Warn("statsd: cannot connect; this flush's counts are lost", "addr", s.addr, "error", err)
			return
		}
		conn = c
		s.mu.Lock()
		s.conn = conn
		s.mu.Unlock()
	}
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	w := bufio.NewWriter(conn)
	_, err := w.WriteString(b.String())
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		s.log.Warn("statsd: sending failed; this flush's counts are lost", "addr", s.addr, "error", err)
		_ = conn.Close()
		s.mu.Lock()
		if s.conn == conn {
			s.conn = nil
		}
		s.mu.Unlock()
	}
}

func sorted[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
