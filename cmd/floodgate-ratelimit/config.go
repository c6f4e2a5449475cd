package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
	"github.com/floodgate/floodgate/internal/rlsstats"
	"github.com/floodgate/floodgate/internal/rlsxds"
)

//go:embed sample.yaml
var sample []byte

// source keeps the service's configuration current and tells who needs
// to know: the log, upstream's counters (config_load_success and _error),
// health (a configuration with a domain in force) and /rlconfig.
type source struct {
	s      *settings
	svc    *rls.Service
	log    *slog.Logger
	stats  rlsstats.Sink      // nil: none
	loaded func(domains bool) // a configuration is in force; domains: it has at least one

	current atomic.Pointer[rlsconfig.Config] // the configuration in force
}

// start loads the configuration into the service and keeps it current
// until ctx ends: from an xDS control plane (CONFIG_TYPE=GRPC_XDS_SOTW),
// else the sample when no directory is set, else the directory's files,
// watched. A directory that cannot be watched is an error; files that do
// not load are logged and kept out, and so are files with a rule the
// store cannot enforce (an algorithm that cannot keep a year on Redis,
// say): svc.CheckRule checks each rule as the files load, so the rest of
// the configuration still takes effect.
func (src *source) start(ctx context.Context) error {
	s := src.s
	if s.xdsOn {
		cfg, err := s.xds.config()
		if err != nil {
			return err
		}
		cfg.MergeDomains = s.merge
		cfg.Check = src.checkAll // a rule the store refuses: the response is refused (NACK)
		w, err := rlsxds.Watch(ctx, cfg, src.apply)
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			_ = w.Close()
		}()
		return nil
	}
	opts := options(s, src.svc)
	if s.config == "" {
		d, err := rlsconfig.Parse("sample.yaml", sample)
		if err != nil {
			return fmt.Errorf("the sample configuration: %w", err)
		}
		c, err := rlsconfig.Of([]*rlsconfig.Domain{d}, opts...)
		if err != nil {
			return fmt.Errorf("the sample configuration: %w", err)
		}
		if err := src.svc.SetRules(rls.FromConfig(c)); err != nil {
			return err
		}
		src.current.Store(c)
		src.loaded(true)
		return nil
	}
	w, err := rlsconfig.Watch(s.config, src.apply, opts...)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = w.Close()
	}()
	return nil
}

// apply is what a configuration source calls with each configuration it
// has, and the errors of the files (or resources) it kept out. The files'
// watcher calls it with a new configuration, the errors of the files it
// kept out; the xDS client with errors only with the configuration
// already in force, which it refused to replace.
func (src *source) apply(c *rlsconfig.Config, errs []error) {
	for _, err := range errs {
		src.log.Error("configuration", "error", err)
	}
	if src.stats != nil {
		src.stats.ConfigLoad(len(errs) == 0)
	}
	if src.s.xdsOn && len(errs) > 0 {
		return
	}
	if err := src.svc.SetRules(rls.FromConfig(c)); err != nil {
		src.log.Error("configuration refused; the one in force stays", "error", err)
		return
	}
	src.current.Store(c)
	src.log.Info("configuration loaded", "domains", len(c.Domains()), "errors", len(errs))
	src.loaded(len(c.Domains()) > 0)
}

// checkAll checks every rule of c against the store.
func (src *source) checkAll(c *rlsconfig.Config) error {
	var errs []error
	for _, d := range c.Domains() {
		for _, r := range d.Rules() {
			if err := src.svc.CheckRule(r); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// check loads s's configuration directory as the service would, its rules
// checked against the store s selects (the Redis store's limits are
// checked without a connection), and writes what it found: every error of
// every file, or how many domains and rules loaded. An error is exit
// status 1.
func check(s *settings, out io.Writer) error {
	store, _, _, closeStore, err := newStore(s)
	if err != nil {
		return err
	}
	defer closeStore()
	svc, err := rls.New(rls.Config{Store: store})
	if err != nil {
		return err
	}
	c, errs := rlsconfig.Load(s.config, options(s, svc)...)
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

// options are rlsconfig's options for s: -merge-domains, upstream's
// RUNTIME_IGNOREDOTFILES=false (dot files read) and RUNTIME_WATCH_ROOT
// (unless set false, with the RUNTIME_* layout: RUNTIME_ROOT's link
// watched, as upstream's default does), with svc's check of each rule
// against its store.
func options(s *settings, svc *rls.Service) []rlsconfig.Option {
	check := svc.CheckRule
	if s.redis != nil && s.store.windows {
		check = func(r *rlsconfig.Rule) error {
			if r.LocalQuota {
				return errors.New("local_quota: true needs -client-clock-windows false (FLOODGATE_RLS_CLIENT_CLOCK_WINDOWS=false) or -local-quota: its leases are taken from the script's counts, which the client-clock windows do not keep")
			}
			return svc.CheckRule(r)
		}
	}
	opts := []rlsconfig.Option{rlsconfig.CheckRules(check)}
	if s.merge {
		opts = append(opts, rlsconfig.MergeDomains())
	}
	if r := s.runtime; r.IgnoreDotFiles.set && !r.IgnoreDotFiles.v {
		opts = append(opts, rlsconfig.ReadDotFiles())
	}
	if r := s.runtime; r.Root != "" && s.config == r.Dir && (!r.WatchRoot.set || r.WatchRoot.v) {
		opts = append(opts, rlsconfig.WatchRoot(r.Root))
	}
	return opts
}
