package rls_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/rls"
	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// TestCheckRule: CheckRule refuses what the store refuses, so that the
// rule's file stays out at its line while the others load, and SetRules
// keeps the limiter CheckRule made rather than asking the store again.
func TestCheckRule(t *testing.T) {
	var made atomic.Int64
	// A store that cannot keep more than 30 days, as Redis cannot for
	// most algorithms.
	store := func(limits []core.Limit) (core.Limiter, error) {
		for _, l := range limits {
			if l.Period > 30*24*time.Hour {
				return nil, errors.New("this store keeps at most 30 days")
			}
		}
		made.Add(1)
		return rls.Memory()(limits)
	}
	svc, err := rls.New(rls.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.yaml": "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1}\n  - key: l\n    rate_limit: {unit: day, requests_per_unit: 1, limits: [{unit: hour, requests_per_unit: 1}]}\n",
		"b.yaml": "domain: b\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 1\n",
		"c.yaml": "domain: c\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true}\n  - key: z\n    rate_limit: {unit: year, requests_per_unit: 0}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, errs := rlsconfig.Load(dir, rlsconfig.CheckRules(svc.CheckRule))
	want := filepath.Join(dir, "b.yaml") + ":5: descriptors[0].rate_limit: rls: the store cannot enforce this rule: this store keeps at most 30 days"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors %v, want %s", errs, want)
	}
	if got := fmt.Sprint(len(c.Domains()), c.Domain("b") == nil); got != "2 true" {
		t.Fatalf("domains %v, want a and c", c.Domains())
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("the store made %d limiters for a.yaml's two rules, want 2", n)
	}
	if err := svc.SetRules(rls.FromConfig(c)); err != nil {
		t.Fatal(err)
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("SetRules made %d more limiters, want none: CheckRule's serve", n-2)
	}
	// Checked again (a reload), the limits in force need no new limiter.
	if _, errs := rlsconfig.Load(dir, rlsconfig.CheckRules(svc.CheckRule)); len(errs) != 1 || made.Load() != 2 {
		t.Fatalf("a second check: %v, %d limiters made", errs, made.Load())
	}
	// A rule built otherwise: a shaper is refused, by name.
	d, err := rlsconfig.Parse("x.yaml", []byte("domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Rules()[0]
	r.Limits = []core.Limit{core.PerSecond(1).WithAlgorithm(core.LeakyBucket)}
	if err := svc.CheckRule(r); err == nil || !strings.Contains(err.Error(), "leaky-bucket cannot be answered by a rate-limit service") {
		t.Fatalf("a leaky bucket: %v", err)
	}
}
