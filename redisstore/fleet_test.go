package redisstore_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/benchwork"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/redisstore"
)

// The fleet tests (issue 20): 4 OS processes, each a redisstore.Limiter
// with 64 goroutines, share a redis-server that TestFleet starts. The
// workers are this test binary run again with -test.run=^TestFleetWorker$
// and fleetWorkerEnv set to their configuration; each logs every admission
// it makes, with wall-clock timestamps (one clock: all the processes and
// redis-server run on this machine), to a file of its own, and TestFleet
// checks the merged logs against the bound redisstore documents.

var fleetChart = flag.Bool("fleetchart", false, "TestFleet: write ../docs/fleet.png from its runs")

const (
	fleetWorkerEnv = "FLOODGATE_FLEET_WORKER"
	fleetWorkers   = 4
	fleetRoutines  = 64
	// fleetPace is each goroutine's pause between calls: 256 goroutines
	// ask about 256 / 20 ms = 12,800 times a second, over six times the
	// hot limit, without spinning the CPU.
	fleetPace = 20 * time.Millisecond
	fleetTick = 100 * time.Millisecond // a worker's demand records
	fleetKeys = 10000                  // the Zipf mix
)

// fleetConfig is a worker's configuration, in fleetWorkerEnv as JSON.
type fleetConfig struct {
	Addr     string
	Prefix   string
	Limit    core.Limit
	Quota    bool          // WithLocalQuota(LocalQuota{Length: Length})
	Length   time.Duration // LocalQuota.Length; 0: its default
	Zipf     bool          // the Zipf mix over fleetKeys keys, else the key "hot"
	Worker   int
	Routines int           // goroutines calling
	Pace     time.Duration // each goroutine's pause between calls; 0: none
	Jitter   bool          // each pause drawn evenly from [0, 2 × Pace), not Pace
	Duration time.Duration
	Log      string
}

// A log record is four int64s, little-endian. An admission: the key's
// index (0 for "hot"), the wall clock before the call was sent and after
// it returned, and the decision's ResetAfter. Every fleetTick, and at the
// end: -1, the wall clock, the calls and the failed calls since the last.
const fleetRecord = 32

// TestFleetWorker is one worker of TestFleet; run on its own, it skips.
func TestFleetWorker(t *testing.T) {
	raw := os.Getenv(fleetWorkerEnv)
	if raw == "" {
		t.Skip("a worker process of TestFleet, which starts it")
	}
	var cfg fleetConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: cfg.Addr, ContextTimeoutEnabled: true})
	defer c.Close()
	// A long timeout: a starved machine under -race must not turn slow
	// round trips into store errors; the timeout changes no decision.
	opts := []redisstore.Option{redisstore.WithPrefix(cfg.Prefix), redisstore.WithTimeout(5 * time.Second)}
	if cfg.Quota {
		opts = append(opts, redisstore.WithLocalQuota(redisstore.LocalQuota{Length: cfg.Length}))
	}
	lim, err := redisstore.New(c, cfg.Limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// Unbuffered appends: a record is in the file once Write returns, so a
	// SIGKILL loses none that was written.
	f, err := os.OpenFile(cfg.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}

	// The Zipf sequence takes a while to draw (a second under -race):
	// before the start.
	var keys []string
	var seq []uint32
	if cfg.Zipf {
		keys, seq = benchwork.Keys(fleetKeys), benchwork.Zipf(fleetKeys)
	}

	// Ready; the parent answers with the instant to start at, the same for
	// every worker.
	fmt.Println("fleet-ready")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the start instant: %v", err)
	}
	start, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	end := start + int64(cfg.Duration)
	time.Sleep(time.Until(time.Unix(0, start))) // at most the parent's lead

	var calls, failed atomic.Int64
	write := func(buf []byte, a, b, c, d int64) {
		for i, v := range [4]int64{a, b, c, d} {
			binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
		}
		if _, err := f.Write(buf); err != nil {
			panic(err) // a worker that cannot log must not pass
		}
	}
	tick := func(buf []byte, last *[2]int64) {
		n, e := calls.Load(), failed.Load()
		write(buf, -1, time.Now().UnixNano(), n-last[0], e-last[1])
		*last = [2]int64{n, e}
	}
	done := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Go(func() {
		buf := make([]byte, fleetRecord)
		var last [2]int64
		tk := time.NewTicker(fleetTick)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				tick(buf, &last)
			case <-done:
				tick(buf, &last)
				return
			}
		}
	})
	var wg sync.WaitGroup
	for g := range cfg.Routines {
		wg.Go(func() {
			buf := make([]byte, fleetRecord)
			pos := (cfg.Worker*fleetRoutines + g) * (benchwork.SeqLen / (fleetWorkers * fleetRoutines))
			for now := time.Now().UnixNano(); now < end; now = time.Now().UnixNano() {
				k := 0
				if cfg.Zipf {
					k = int(seq[pos%benchwork.SeqLen])
					pos++
				}
				key := "hot"
				if cfg.Zipf {
					key = keys[k]
				}
				d, err := lim.Allow(context.Background(), key, 1)
				after := time.Now().UnixNano()
				calls.Add(1)
				switch {
				case err != nil:
					failed.Add(1)
				case d.Allowed:
					write(buf, int64(k), now, after, int64(d.ResetAfter))
				}
				switch {
				case cfg.Pace > 0 && cfg.Jitter:
					time.Sleep(rand.N(2 * cfg.Pace))
				case cfg.Pace > 0:
					time.Sleep(cfg.Pace)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	ticker.Wait()
	h := lim.Health()
	health, _ := json.Marshal(h)
	if err := os.WriteFile(cfg.Log+".health", health, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fleetRun is one run of the fleet.
type fleetRun struct {
	name     string
	limit    core.Limit
	quota    bool
	zipf     bool
	duration time.Duration
	kill     time.Duration // after the start, worker 0 is killed; 0: none
	workers  int           // worker processes; 0: fleetWorkers (at most that)
	routines int           // goroutines per worker; 0: fleetRoutines
	pace     time.Duration // 0: fleetPace; < 0: no pause between calls
	jitter   bool          // pauses drawn evenly from [0, 2 × pace)
	length   time.Duration // LocalQuota.Length; 0: its default
}

func (r fleetRun) nWorkers() int {
	if r.workers == 0 {
		return fleetWorkers
	}
	return r.workers
}

// config is worker w's configuration, the run's defaults filled in.
func (r fleetRun) config(addr, prefix string, w int, log string) fleetConfig {
	routines, pace := r.routines, r.pace
	if routines == 0 {
		routines = fleetRoutines
	}
	if pace == 0 {
		pace = fleetPace
	}
	return fleetConfig{
		Addr: addr, Prefix: prefix, Limit: r.limit, Quota: r.quota, Length: r.length, Zipf: r.zipf,
		Worker: w, Routines: routines, Pace: max(pace, 0), Jitter: r.jitter, Duration: r.duration, Log: log,
	}
}

// fleetResult is what a run's workers logged, and what the server counted.
type fleetResult struct {
	run        fleetRun
	start, end int64 // wall clock, ns
	killedAt   int64 // when Kill returned; 0: none
	adm        [fleetWorkers][]fleetAdm
	ticks      [fleetWorkers][]fleetTickRec
	health     [fleetWorkers]core.Health
	commands   int64 // total_commands_processed during the run
	evalsha    int64 // cmdstat_evalsha calls during the run
	sent       int64 // commands the clients sent (FCALL, EVALSHA, ...) during the run
	length     int64 // the lease length L, ns; 0 in exact mode
}

type fleetAdm struct {
	key         int
	s, r, reset int64
}

type fleetTickRec struct {
	at, calls, failed int64
}

// runFleet starts the run's workers against srv, waits for them to end
// (killing worker 0 on the way if the run says so) and reads their logs.
func runFleet(t *testing.T, srv *redistest.Server, c *redis.Client, run fleetRun, prefix string) *fleetResult {
	t.Helper()
	dir := t.TempDir()
	res := &fleetResult{run: run}
	if run.quota {
		res.length = int64(min(run.limit.Period/10, time.Second))
		if run.length > 0 {
			res.length = int64(run.length)
		}
	}
	workers := run.nWorkers()
	ctx, cancel := context.WithTimeout(context.Background(), run.duration+30*time.Second)
	defer cancel()
	cmds := make([]*exec.Cmd, workers)
	stdins := make([]interface{ Write([]byte) (int, error) }, workers)
	ready := make(chan error, workers)
	for w := range workers {
		cfg, _ := json.Marshal(run.config(srv.Addr(), prefix, w, filepath.Join(dir, fmt.Sprintf("w%d.log", w))))
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFleetWorker$", "-test.count=1", "-test.timeout=60s")
		cmd.Env = append(os.Environ(), fleetWorkerEnv+"="+string(cfg))
		cmd.WaitDelay = 5 * time.Second
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[w], stdins[w] = cmd, in
		go func() {
			sc := bufio.NewScanner(out)
			seen := false
			var rest []string
			for sc.Scan() {
				if sc.Text() == "fleet-ready" && !seen {
					seen = true
					ready <- nil
					continue
				}
				rest = append(rest, sc.Text())
			}
			if !seen {
				ready <- fmt.Errorf("worker %d ended before it was ready:\n%s\n%s", w, strings.Join(rest, "\n"), stderr.String())
			}
		}()
	}
	for range workers {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("workers not ready within the run's time limit")
		}
	}

	before := commandCounts(t, c)
	// A fixed window's runs start 0.9 s past a whole second, so that the
	// window from 1.9 s to 2.9 s lies whole within the steady state.
	res.start = time.Now().Add(100 * time.Millisecond).UnixNano()
	if run.limit.Algorithm == core.FixedWindow {
		sec := int64(time.Second)
		res.start = (res.start-int64(900*time.Millisecond))/sec*sec + sec + int64(900*time.Millisecond)
	}
	res.end = res.start + int64(run.duration)
	for _, in := range stdins {
		fmt.Fprintf(in, "%d\n", res.start)
	}
	if run.kill > 0 {
		time.Sleep(time.Until(time.Unix(0, res.start+int64(run.kill))))
		if err := cmds[0].Process.Kill(); err != nil {
			t.Fatal(err)
		}
		res.killedAt = time.Now().UnixNano()
	}
	for w, cmd := range cmds {
		err := cmd.Wait()
		if w == 0 && run.kill > 0 {
			continue
		}
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	after := commandCounts(t, c)
	res.commands = after["total_commands_processed"] - before["total_commands_processed"] - 1 // the INFO itself
	res.evalsha = after["cmdstat_evalsha"] - before["cmdstat_evalsha"]
	res.sent = after["client_calls"] - before["client_calls"]
	for w := range workers {
		res.adm[w], res.ticks[w] = readFleetLog(t, filepath.Join(dir, fmt.Sprintf("w%d.log", w)))
		if data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("w%d.log.health", w))); err == nil {
			json.Unmarshal(data, &res.health[w])
		} else if w != 0 || run.kill == 0 {
			t.Fatalf("worker %d left no health: %v", w, err)
		}
	}
	return res
}

// commandCounts reads total_commands_processed, the calls of each
// command (cmdstat_<name>) and the commands clients sent (client_calls:
// neither INFO nor the commands scripts run) from one INFO.
func commandCounts(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	reply, err := c.Info(context.Background(), "stats", "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	info := redistest.ParseInfo(reply)
	m := map[string]int64{"total_commands_processed": info.Int(t, "total_commands_processed"), "client_calls": info.ClientCalls(t)}
	for name, s := range info.Commands(t) {
		m["cmdstat_"+name] = s.Calls
	}
	return m
}

func readFleetLog(t *testing.T, path string) ([]fleetAdm, []fleetTickRec) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A killed worker may have been stopped in the middle of a write.
	data = data[:len(data)/fleetRecord*fleetRecord]
	var adm []fleetAdm
	var ticks []fleetTickRec
	for rec := range slices.Chunk(data, fleetRecord) {
		var v [4]int64
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(rec[8*i:]))
		}
		if v[0] < 0 {
			ticks = append(ticks, fleetTickRec{v[1], v[2], v[3]})
		} else {
			adm = append(adm, fleetAdm{int(v[0]), v[1], v[2], v[3]})
		}
	}
	return adm, ticks
}
