package redistest_test

import (
	"testing"

	"github.com/floodgate/floodgate/internal/redistest"
)

// An INFO reply as Redis 7 writes it: CRLF lines, section headers.
const infoReply = "# Stats\r\ntotal_commands_processed:1234\r\nexpired_keys:7\r\n\r\n" +
	"# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500000\r\n\r\n" +
	"# Commandstats\r\ncmdstat_get:calls=10,usec=25,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_function|load:calls=3,usec=900,usec_per_call=300.00,rejected_calls=0,failed_calls=1\r\n"

func TestParseInfo(t *testing.T) {
	info := redistest.ParseInfo(infoReply)
	if got := info.Int(t, "total_commands_processed"); got != 1234 {
		t.Errorf("total_commands_processed = %d, want 1234", got)
	}
	if got := info.Int(t, "expired_keys"); got != 7 {
		t.Errorf("expired_keys = %d, want 7", got)
	}
	if got := info.Float(t, "used_cpu_sys") + info.Float(t, "used_cpu_user"); got != 1.75 {
		t.Errorf("cpu = %v, want 1.75", got)
	}
	cmds := info.Commands(t)
	want := map[string]redistest.CommandStat{
		"get":           {Calls: 10, Usec: 25},
		"function|load": {Calls: 3, Usec: 900, Failed: 1},
	}
	if len(cmds) != len(want) {
		t.Fatalf("Commands() = %v, want %v", cmds, want)
	}
	for k, w := range want {
		if cmds[k] != w {
			t.Errorf("Commands()[%q] = %+v, want %+v", k, cmds[k], w)
		}
	}
	if _, ok := info["# Stats"]; ok {
		t.Error("a section header was read as a field")
	}
}
