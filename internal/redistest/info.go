package redistest

import (
	"strconv"
	"strings"
	"testing"
)

// Info is a server's reply to INFO: the value of each "name:value" line,
// by name ("total_commands_processed", "used_cpu_sys", "cmdstat_get").
type Info map[string]string

// ParseInfo reads reply, the text of an INFO command of any sections;
// section headers, blank lines and lines without a colon are left out.
func ParseInfo(reply string) Info {
	info := Info{}
	for line := range strings.Lines(reply) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if name, val, ok := strings.Cut(line, ":"); ok {
			info[name] = val
		}
	}
	return info
}

// Int returns the field name as a whole number; it fails tb when the
// reply has no such field, or one that is not a whole number.
func (i Info) Int(tb testing.TB, name string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(i.field(tb, name), 10, 64)
	if err != nil {
		tb.Fatalf("INFO %s: %v", name, err)
	}
	return n
}

// Float returns the field name as a number; it fails tb as Int does.
func (i Info) Float(tb testing.TB, name string) float64 {
	tb.Helper()
	f, err := strconv.ParseFloat(i.field(tb, name), 64)
	if err != nil {
		tb.Fatalf("INFO %s: %v", name, err)
	}
	return f
}

func (i Info) field(tb testing.TB, name string) string {
	tb.Helper()
	v, ok := i[name]
	if !ok {
		tb.Fatalf("INFO has no %s (did the call ask for its section?)", name)
	}
	return v
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls, Usec, Failed int64 // calls, usec and failed_calls
}

// Commands returns the commandstats lines of the reply by command, as
// Redis names them ("get", "fcall", "function|load"); it fails tb on a
// line whose numbers do not read.
func (i Info) Commands(tb testing.TB) map[string]CommandStat {
	tb.Helper()
	m := map[string]CommandStat{}
	for name, val := range i {
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		var s CommandStat
		for field := range strings.SplitSeq(val, ",") {
			k, v, _ := strings.Cut(field, "=")
			var dst *int64
			switch k {
			case "calls":
				dst = &s.Calls
			case "usec":
				dst = &s.Usec
			case "failed_calls":
				dst = &s.Failed
			default:
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("INFO %s: %s: %v", name, k, err)
			}
			*dst = n
		}
		m[cmd] = s
	}
	return m
}

// scriptCommands are the commands floodgate's scripts run, which INFO
// commandstats counts as if a client had sent them.
var scriptCommands = map[string]bool{"time": true, "get": true, "set": true, "pttl": true, "pexpire": true, "del": true, "exists": true,
	"zadd": true, "zrem": true, "zscore": true, "zrange": true, "zrangebyscore": true, "zremrangebyrank": true, "zremrangebyscore": true, "zcard": true}

// ClientCalls is how many commands clients sent the server, of the
// commandstats section: INFO itself and the commands scripts run aside.
func (i Info) ClientCalls(tb testing.TB) int64 {
	tb.Helper()
	var n int64
	for name, s := range i.Commands(tb) {
		if name != "info" && !scriptCommands[name] {
			n += s.Calls
		}
	}
	return n
}
