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
// and so is a configuration the service refuses (an algorithm it cannot
// answer with), whose predecessor stays.
func configure(ctx context.Context, dir string, merge bool, svc *rls.Service, log *slog.Logger, loaded func()) error {
	if dir == "" {
		d, err := rlsconfig.Parse("sample.yaml", sample)
		if err != nil {
			return fmt.Errorf("the sample configuration: %w", err)
		}
		c, err := rlsconfig.Of([]*rlsconfig.Domain{d})
		if err != nil {
			return err
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
	}, options(merge)...)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		_ = w.Close()
	}()
	return nil
}

// check loads dir as the service would and writes what it found: every
// error, or how many domains and rules loaded. An error is exit status 1.
func check(dir string, merge bool, out io.Writer) error {
	c, errs := rlsconfig.Load(dir, options(merge)...)
	for _, err := range errs {
		fmt.Fprintln(out, err)
	}
	svc, err := rls.New(rls.Config{Store: rls.Memory()})
	if err != nil {
		return err
	}
	rules, all := rls.FromConfig(c)
	if err := svc.SetRules(rules, all); err != nil {
		fmt.Fprintln(out, err)
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return exitCode(1)
	}
	fmt.Fprintf(out, "%s: %d domains, %d rules: OK\n", dir, len(c.Domains()), len(all))
	return nil
}

// options are rlsconfig's options for the -merge-domains setting.
func options(merge bool) []rlsconfig.Option {
	if merge {
		return []rlsconfig.Option{rlsconfig.MergeDomains()}
	}
	return nil
}
