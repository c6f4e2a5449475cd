package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"log/slog"

	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

//go:embed sample.yaml
var sample []byte

// configure loads the configuration into svc and keeps it current: the
// sample when dir is "", else dir's files, watched until ctx ends. loaded
// runs once a configuration is in force. A directory that cannot be
// watched is an error; files that do not load are logged and kept out,
// and so are files with a rule svc's store cannot enforce (an algorithm
// that cannot keep a year on Redis, say): svc.CheckRule checks each rule
// as the files load, so the rest of the configuration still takes effect.
func configure(ctx context.Context, dir string, merge bool, svc *rls.Service, log *slog.Logger, loaded func()) error {
	opts := options(merge, svc)
	if dir == "" {
		d, err := rlsconfig.Parse("sample.yaml", sample)
		if err != nil {
			return fmt.Errorf("the sample configuration: %w", err)
		}
		c, err := rlsconfig.Of([]*rlsconfig.Domain{d}, opts...)
		if err != nil {
			return fmt.Errorf("the sample configuration: %w", err)
		}
		if err := svc.SetRules(rls.FromConfig(c)); err != nil {
			return err
		}
		loaded()
		return nil
	}
	w, err := rlsconfig.Watch(dir, func(c *rlsconfig.Config, errs []error) {
		for _, err := range errs {
			log.Error("configuration", "error", err)
		}
		if err := svc.SetRules(rls.FromConfig(c)); err != nil {
			log.Error("configuration refused; the one in force stays", "error", err)
			return
		}
		log.Info("configuration loaded", "domains", len(c.Domains()), "errors", len(errs))
		if len(c.Domains()) > 0 {
			loaded()
		}
	}, opts...)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = w.Close()
	}()
	return nil
}

// check loads s's configuration directory as the service would, its rules
// checked against the store s selects (the Redis store's limits are
// checked without a connection), and writes what it found: every error of
// every file, or how many domains and rules loaded. An error is exit
// status 1.
func check(s *settings, out io.Writer) error {
	store, _, closeStore, err := newStore(s)
	if err != nil {
		return err
	}
	defer closeStore()
	svc, err := rls.New(rls.Config{Store: store})
	if err != nil {
		return err
	}
	c, errs := rlsconfig.Load(s.config, options(s.merge, svc)...)
	for _, err := range errs {
		fmt.Fprintln(out, err)
	}
	rules, all := rls.FromConfig(c)
	if err := svc.SetRules(rules, all); err != nil {
		fmt.Fprintln(out, err)
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return exitCode(1)
	}
	fmt.Fprintf(out, "%s: %s, %s: OK\n", s.config, count(len(c.Domains()), "domain"), count(len(all), "rule"))
	return nil
}

// count writes n things: "1 domain", "2 domains".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// options are rlsconfig's options for the -merge-domains setting, with
// svc's check of each rule against its store.
func options(merge bool, svc *rls.Service) []rlsconfig.Option {
	opts := []rlsconfig.Option{rlsconfig.CheckRules(svc.CheckRule)}
	if merge {
		opts = append(opts, rlsconfig.MergeDomains())
	}
	return opts
}
