package main

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// newLogger is the service's log on out: slog's text lines, or with json
// upstream's JSON lines (@timestamp, @message, level as logrus names it).
func newLogger(out io.Writer, level slog.Level, json bool) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if !json {
		return slog.New(slog.NewTextHandler(out, o))
	}
	o.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) > 0 {
			return a
		}
		switch a.Key {
		case slog.TimeKey:
			return slog.String("@timestamp", a.Value.Time().Format(time.RFC3339Nano))
		case slog.MessageKey:
			a.Key = "@message"
		case slog.LevelKey:
			lv := a.Value.Any().(slog.Level)
			switch {
			case lv < slog.LevelDebug:
				a.Value = slog.StringValue("trace")
			case lv < slog.LevelInfo:
				a.Value = slog.StringValue("debug")
			case lv < slog.LevelWarn:
				a.Value = slog.StringValue("info")
			case lv < slog.LevelError:
				a.Value = slog.StringValue("warning")
			default:
				a.Value = slog.StringValue("error")
			}
		}
		return a
	}
	return slog.New(slog.NewJSONHandler(out, o))
}

// loggerOf is the log the environment's LOG_LEVEL and LOG_FORMAT ask for
// (their errors are run's to report).
func loggerOf(look lookupEnv, out io.Writer) *slog.Logger {
	s := &settings{}
	s.logging(newEnv(look))
	return newLogger(out, s.logLevel, s.logJSON)
}

// configName says where the configuration comes from, for the log.
func configName(s *settings) string {
	if s.xdsOn {
		return "xDS " + s.xds.ServerURL + " as " + s.xds.NodeID
	}
	return or(s.config, "(sample)")
}

func storeName(s *settings) string {
	switch {
	case s.redis == nil:
		return "memory"
	case s.perSecond != nil:
		return fmt.Sprintf("%s; per second: %s", s.redis, s.perSecond)
	default:
		return s.redis.String()
	}
}
