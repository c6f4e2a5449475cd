package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/coretest"
)

// TestOverload runs both phases, shorter, on a real loopback server at
// twice the service's capacity. The figures depend on the machine, so the
// checks are the ones no machine can turn around: with no protection the
// queue outgrows the SLO and nearly nothing is served in time; behind the
// guard several times as much is, what it refuses is answered 503 with a
// Retry-After, and Sheddable requests are shed at least as often as
// Critical ones.
func TestOverload(t *testing.T) {
	var out bytes.Buffer
	// A tenth of a core's HTTP work at most, so that a busy machine's CPU
	// is not what limits the service (the race detector makes each
	// request several times dearer: fewer still).
	cfg := config{workers: 8, work: 20 * time.Millisecond, load: 2, run: 2 * time.Second, seed: 1}
	if coretest.Race {
		cfg.workers, cfg.work = 4, 40*time.Millisecond
	}
	rows, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	none, guarded := rows[0], rows[1]
	if none.all.shed != 0 || len(none.limits) != 0 {
		t.Errorf("no protection shed %d and sampled a limit %v", none.all.shed, none.limits)
	}
	if guarded.all.inTime < 2*none.all.inTime || guarded.all.inTime == 0 {
		t.Errorf("in time: %d behind the guard, %d with no protection; want at least twice as many", guarded.all.inTime, none.all.inTime)
	}
	if guarded.all.shed == 0 || guarded.shedBare != 0 || guarded.other != 0 {
		t.Errorf("behind the guard: %d shed, %d of them without a Retry-After, %d other answers; want sheds, all with a Retry-After, nothing else",
			guarded.all.shed, guarded.shedBare, guarded.other)
	}
	crit, shed := guarded.class[0], guarded.class[2]
	if shed.shed*crit.offered < crit.shed*shed.offered {
		t.Errorf("shed: critical %d of %d, sheddable %d of %d; want sheddable shed at least as often", crit.shed, crit.offered, shed.shed, shed.offered)
	}
	if len(guarded.limits) == 0 || guarded.baseline <= 0 {
		t.Errorf("the guard's limits %v, baseline %v: not sampled", guarded.limits, guarded.baseline)
	}
	for _, want := range []string{"no protection", "overload.Adaptive", "limit every 250ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output without %q", want)
		}
	}
}
