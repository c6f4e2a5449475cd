package rlsconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
)

// basicConfig is envoyproxy/ratelimit's test/config/basic_config.yaml.
const basicConfig = `# Basic configuration for testing.
domain: test-domain
descriptors:
  - key: key1
    value: value1
    descriptors:
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 30
  - key: key2
    value: value3
  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: key4
    rate_limit:
      name: key4_rate_limit
      unit: day
      requests_per_unit: 1
  - key: key5
    value: value5
    rate_limit:
      unit: day
      requests_per_unit: 15
    descriptors:
      - key: subkey5
        value: subvalue5
        rate_limit:
          unit: day
          requests_per_unit: 25
  - key: key6
    rate_limit:
      unlimited: true
  - key: key7
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 70
`

// TestUpstreamBasicConfig: the decisions envoyproxy/ratelimit's
// TestBasicConfig checks on basic_config.yaml.
func TestUpstreamBasicConfig(t *testing.T) {
	d, err := Parse("basic_config.yaml", []byte(basicConfig))
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, d, []decision{
		{d: nil},
		{d: e("key1=something")},
		{d: e("key1=value1")},
		{d: e("key2=value2", "subkey=subvalue")},
		{d: e("key5=value5", "subkey5=subvalue")},
		{d: e("key1=value1", "subkey1=something"), rule: "test-domain.key1_value1.subkey1", limit: "5/second", stats: "test-domain.key1_value1.subkey1"},
		{d: e("key1=value1", "subkey1=subvalue1"), rule: "test-domain.key1_value1.subkey1_subvalue1", limit: "10/second", stats: "test-domain.key1_value1.subkey1_subvalue1"},
		{d: e("key2=something"), rule: "test-domain.key2", limit: "20/minute", stats: "test-domain.key2"},
		{d: e("key2=value2"), rule: "test-domain.key2_value2", limit: "30/minute", stats: "test-domain.key2_value2"},
		{d: e("key2=value3")},
		{d: e("key3=foo"), rule: "test-domain.key3", limit: "1/hour"},
		{d: e("key4=foo"), rule: "test-domain.key4", limit: "1/day"},
		{d: e("key6=foo"), rule: "test-domain.key6", limit: "unlimited"},
		{d: e("key7=unspecified_value"), rule: "test-domain.key7", limit: "70/minute", stats: "test-domain.key7_unspecified_value"},
		{d: e("key7=another_value"), rule: "test-domain.key7", limit: "70/minute", stats: "test-domain.key7_another_value"},
	})
	if r := d.Match(e("key4=foo")); r.Name != "key4_rate_limit" {
		t.Errorf("key4's name %q", r.Name)
	}
	if r := d.Match(e("key6=foo")); len(r.Limits) != 0 || r.DenyAll {
		t.Errorf("unlimited: limits %v, deny all %v", r.Limits, r.DenyAll)
	}
	r := d.Match(e("key3=foo"))
	want := core.Limit{Events: 1, Period: time.Hour, Algorithm: core.FixedWindow}
	if len(r.Limits) != 1 || r.Limits[0] != want {
		t.Errorf("key3's limits %+v, want %+v", r.Limits, want)
	}
}

// TestUpstreamWildcard: envoyproxy/ratelimit's TestWildcardConfig on
// wildcard.yaml.
func TestUpstreamWildcard(t *testing.T) {
	d, err := Parse("wildcard.yaml", []byte(`
domain: test-domain
descriptors:
  - key: wild
    value: foo*
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noWild
    value: foo
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: noVal
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: midWild
    value: bar*b
    rate_limit: {unit: minute, requests_per_unit: 20}
  - key: multiWild
    value: foo*bar*baz
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: nestedWild
    value: val1
    descriptors:
      - key: wild
        value: goo*
        rate_limit: {unit: minute, requests_per_unit: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, d, []decision{
		{d: e("noVal=foo1"), rule: "test-domain.noVal", limit: "20/minute", stats: "test-domain.noVal", otherKey: e("noVal=foo2")},
		{d: e("wild=foo1"), rule: "test-domain.wild_foo*", limit: "20/minute", stats: "test-domain.wild_foo*", otherKey: e("wild=foo2")},
		{d: e("nestedWild=val1", "wild=goo2"), rule: "test-domain.nestedWild_val1.wild_goo*", limit: "20/minute", stats: "test-domain.nestedWild_val1.wild_goo*"},
		{d: e("wild=bar")},
		{d: e("noWild=foo1")},
		{d: e("midWild=barab"), rule: "test-domain.midWild_bar*b", limit: "20/minute", stats: "test-domain.midWild_bar*b"},
		{d: e("midWild=bar123b"), rule: "test-domain.midWild_bar*b", limit: "20/minute"},
		{d: e("midWild=barb"), rule: "test-domain.midWild_bar*b", limit: "20/minute"},
		{d: e("midWild=bara")},
		{d: e("midWild=xbarb")},
		{d: e("multiWild=foo123bar456baz"), rule: "test-domain.multiWild_foo*bar*baz", limit: "10/minute", stats: "test-domain.multiWild_foo*bar*baz"},
		{d: e("multiWild=foobarbaz"), rule: "test-domain.multiWild_foo*bar*baz", limit: "10/minute"},
		{d: e("multiWild=foo123baz")},
		{d: e("multiWild=bar456baz")},
	})
}

// TestUpstreamShareThreshold: envoyproxy/ratelimit's TestShareThreshold on
// share_threshold.yaml (its cases with keys).
func TestUpstreamShareThreshold(t *testing.T) {
	d, err := Parse("share_threshold.yaml", []byte(`
domain: test-domain
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: nested
    value: parent
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 200}
  - key: files
    value: top/*
    share_threshold: true
    descriptors:
      - key: files
        value: nested/*
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 300}
  - key: service
    value: svc/*
    share_threshold: true
    descriptors:
      - key: endpoint
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 80}
  - key: path
    value: path/*
    share_threshold: true
    descriptors:
      - key: file
        value: file/*
        share_threshold: false
        descriptors:
          - key: type
            rate_limit: {unit: minute, requests_per_unit: 120}
  - key: file
    value: test1
    rate_limit: {unit: minute, requests_per_unit: 50}
  - key: file
    value: test*
    share_threshold: true
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: midroute
    value: /api*v2
    share_threshold: true
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 80}
  - key: tenant
    value: t*prod
    share_threshold: true
    descriptors:
      - key: resource
        value: res*v2
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 60}
`))
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, d, []decision{
		{d: e("files=files/a.pdf"), rule: "test-domain.files_files/*", limit: "100/minute", stats: "test-domain.files_files/*", sameKey: e("files=files/b.csv")},
		{d: e("nested=parent", "files=nested/x"), rule: "test-domain.nested_parent.files_nested/*", limit: "200/minute",
			stats: "test-domain.nested_parent.files_nested/*", sameKey: e("nested=parent", "files=nested/y")},
		{d: e("files=top/a", "files=nested/b"), rule: "test-domain.files_top/*.files_nested/*", limit: "300/minute",
			stats: "test-domain.files_top/*.files_nested/*", sameKey: e("files=top/c", "files=nested/d")},
		{d: e("service=svc/a", "endpoint=get"), rule: "test-domain.service_svc/*.endpoint", limit: "80/minute",
			stats: "test-domain.service_svc/*.endpoint_get", otherKey: e("service=svc/b", "endpoint=put")},
		// The parent shares, the child does not: one count per file.
		{d: e("path=path/a", "file=file/x", "type=t"), rule: "test-domain.path_path/*.file_file/*.type", limit: "120/minute",
			stats: "test-domain.path_path/*.file_file/*.type", sameKey: e("path=path/b", "file=file/x", "type=t"), otherKey: e("path=path/a", "file=file/y", "type=t")},
		// An exact value before the wildcard.
		{d: e("file=test1"), rule: "test-domain.file_test1", limit: "50/minute", stats: "test-domain.file_test1", otherKey: e("file=test2")},
		{d: e("file=test2"), rule: "test-domain.file_test*", limit: "100/minute", stats: "test-domain.file_test*", sameKey: e("file=test123")},
		{d: e("midroute=/api/v2"), rule: "test-domain.midroute_/api*v2", limit: "80/minute", stats: "test-domain.midroute_/api*v2", sameKey: e("midroute=/apiXv2")},
		{d: e("tenant=t1prod", "resource=res1v2"), rule: "test-domain.tenant_t*prod.resource_res*v2", limit: "60/minute",
			stats: "test-domain.tenant_t*prod.resource_res*v2", sameKey: e("tenant=t2prod", "resource=resXv2")},
	})
}

// TestUpstreamErrors: every file envoyproxy/ratelimit's test/config
// refuses is refused here too, with the file, the line and what to fix.
func TestUpstreamErrors(t *testing.T) {
	for _, tc := range []struct{ file, yaml, want string }{
		{"bad_limit_unit.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: foo\n      requests_per_unit: 5\n",
			`bad_limit_unit.yaml:6: descriptors[0].rate_limit.unit: invalid rate limit unit "foo"; use second, minute, hour, day, week, month or year (or unlimited: true)`},
		{"bad_yaml.yaml", "'''\n", "bad_yaml.yaml:1: yaml: found unexpected end of stream"},
		{"empty_domain.yaml", "descriptors:\n", "empty_domain.yaml:1: domain: the domain is empty; every file needs one (domain: name)"},
		{"empty_key.yaml", "domain: test-domain\ndescriptors:\n  - value: value1\n", "empty_key.yaml:3: descriptors[0].key: the descriptor has an empty key; every descriptor needs one (key: name)"},
		{"duplicate_key.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n\n  - key: key1\n    value: value1\n",
			"duplicate_key.yaml:6: descriptors[1]: duplicate descriptor test-domain.key1_value1 (also at line 3)"},
		{"misspelled_key.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    ratelimit:\n      unit: day\n      requests_per_unit: 5\n",
			`misspelled_key.yaml:5: descriptors[0].ratelimit: unknown key "ratelimit"; use one of key, value, rate_limit, descriptors,`},
		{"misspelled_key2.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit:\n      unit: day\n      requestsperunit: 5\n",
			`misspelled_key2.yaml:7: descriptors[0].rate_limit.requestsperunit: unknown key "requestsperunit"; use one of unit, requests_per_unit,`},
		{"non_string_key.yaml", "0.25: test-domain\ndescriptors:\n  - key: key1\n", `non_string_key.yaml:1: the key "0.25" is not a string; use one of domain, descriptors`},
		{"non_map_list.yaml", "domain: test-domain\ndescriptors:\n  - a\n  - b\n  - c\n", `non_map_list.yaml:3: descriptors[0]: want descriptors (a mapping, key: value lines), got "a"`},
		{"replaces_empty.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    descriptors:\n      - key: subkey1\n        rate_limit:\n          name: self\n          replaces:\n            - name:\n          unit: second\n          requests_per_unit: 5\n",
			"replaces_empty.yaml:10: descriptors[0].descriptors[0].rate_limit.replaces[0].name: an empty replaces entry; name the rate_limit it replaces"},
		{"replaces_self.yaml", "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    descriptors:\n      - key: subkey1\n        rate_limit:\n          name: self\n          replaces:\n            - name: self\n          unit: second\n          requests_per_unit: 5\n",
			`replaces_self.yaml:10: descriptors[0].descriptors[0].rate_limit.replaces[0].name: replaces its own rate_limit's name "self"`},
		{"unlimited_with_unit.yaml", "domain: test-domain\ndescriptors:\n  - key: foo\n    rate_limit:\n      unlimited: true\n      unit: day\n      requests_per_unit: 25\n",
			"unlimited_with_unit.yaml:6: descriptors[0].rate_limit.unit: unlimited: true takes no unit; remove one of them"},
		// Beyond upstream's files.
		{"share.yaml", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
			`share.yaml:5: descriptors[0].share_threshold: share_threshold applies only to a wildcard value (one with '*'), and "v" has none`},
		{"joined.yaml", "domain: d\ndescriptors:\n  - key: a_b\n  - key: a\n    value: b\n", "joined.yaml:4: descriptors[1]: duplicate descriptor d.a_b (also at line 3)"},
		{"misplaced.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      shadow_mode: true\n",
			"misplaced.yaml:7: descriptors[0].rate_limit.shadow_mode: unknown key here; it belongs in a descriptor, beside rate_limit (envoyproxy/ratelimit ignores it here)"},
		{"twice.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      unit: minute\n",
			"twice.yaml:6: descriptors[0].rate_limit.unit: given twice (first at line 5); keep one"},
		{"nounit.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n", `nounit.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit ""`},
		{"unknownunit.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: unknown, requests_per_unit: 5}\n", `unknownunit.yaml:4: descriptors[0].rate_limit.unit: invalid rate limit unit "unknown"`},
		{"negative.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n", `negative.yaml:4: descriptors[0].rate_limit.requests_per_unit: want a whole number from 0 to 4294967295, got "-1"`},
		{"huge.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 4294967296}\n", `huge.yaml:4: descriptors[0].rate_limit.requests_per_unit: want a whole number`},
		{"bool.yaml", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", `bool.yaml:4: descriptors[0].shadow_mode: want true or false, got "maybe"`},
		{"empty.yaml", "# nothing\n", "empty.yaml: the file is empty; it needs a domain: and its descriptors:"},
		{"two.yaml", "domain: a\n---\ndomain: b\n", "two.yaml:2: a second YAML document"},
		{"list.yaml", "domain: d\ndescriptors:\n  key: k\n", "list.yaml:3: descriptors: want a list of descriptors, got a mapping"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Parse(tc.file, []byte(tc.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != tc.file {
				t.Errorf("not an *Error naming the file: %#v", err)
			}
		})
	}
}

// TestUpstreamAccepts: spellings envoyproxy/ratelimit's decoder accepts.
func TestUpstreamAccepts(t *testing.T) {
	d, err := Parse("ok.yaml", []byte(`
domain: 42
descriptors:
  - key: port
    value: 8080
    shadow_mode: yes
    rate_limit: &base
      unit: SECOND
      requests_per_unit: 7
  - key: other
    rate_limit:
      <<: *base
      unit: Week
  - key: month
    metadata: {team: {name: a}}
    rate_limit: {unit: month, requests_per_unit: 1}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 1, unlimited: false}
`))
	if err != nil {
		t.Fatal(err)
	}
	checkDecisions(t, d, []decision{
		{d: e("port=8080"), rule: "42.port_8080", limit: "7/second", shadow: true},
		{d: e("other=x"), rule: "42.other", limit: "7/week"},
		{d: e("month=x"), rule: "42.month", limit: "1/month"},
		{d: e("year=x"), rule: "42.year", limit: "1/year"},
	})
	if r := d.Match(e("month=x")); r.Metadata["team"].(map[string]any)["name"] != "a" || r.Limits[0].Period != 30*24*time.Hour {
		t.Errorf("month: metadata %v, limits %v", r.Metadata, r.Limits)
	}
}

// TestAdditions: floodgate's fields compile to core limits.
func TestAdditions(t *testing.T) {
	d, err := Parse("add.yaml", []byte(`
domain: d
descriptors:
  - key: a
    rate_limit:
      unit: second
      requests_per_unit: 10
      algorithm: gcra
      burst: 20
      limits:
        - unit: hour
          requests_per_unit: 5000
        - unit: minute
          requests_per_unit: 100
          algorithm: sliding-window
  - key: zero
    rate_limit:
      unit: second
      requests_per_unit: 5
      limits: [{unit: hour, requests_per_unit: 0}]
`))
	if err != nil {
		t.Fatal(err)
	}
	r := d.Match(e("a=1"))
	want := []core.Limit{
		{Events: 10, Period: time.Second, Burst: 20, Algorithm: core.GCRA},
		{Events: 5000, Period: time.Hour, Algorithm: core.GCRA},
		{Events: 100, Period: time.Minute, Algorithm: core.SlidingWindow},
	}
	if len(r.Limits) != len(want) {
		t.Fatalf("limits %+v", r.Limits)
	}
	for i := range want {
		if r.Limits[i] != want[i] {
			t.Errorf("limit %d: %+v, want %+v", i, r.Limits[i], want[i])
		}
	}
	if _, err := core.NewStack(r.Limits); err != nil {
		t.Errorf("NewStack: %v", err)
	}
	big, err := Parse("big.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: year, requests_per_unit: 4294967295}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := big.Match(e("k=x")); r.RequestsPerUnit != 4294967295 || r.Limits[0].Events != 1<<31-1 {
		t.Errorf("largest requests_per_unit: %d, limits %+v", r.RequestsPerUnit, r.Limits)
	}
	if z := d.Match(e("zero=1")); !z.DenyAll || len(z.Limits) != 0 || z.RequestsPerUnit != 5 {
		t.Errorf("zero: %+v", z)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"algorithm: nope", `x.yaml:7: descriptors[0].rate_limit.algorithm: core: unknown algorithm "nope"`},
		{"algorithm: concurrency", "x.yaml:7: descriptors[0].rate_limit.algorithm: concurrency counts requests in flight"},
		{"burst: 5", "x.yaml:7: descriptors[0].rate_limit.burst: fixed-window ignores burst; set algorithm: token-bucket or gcra"},
		{"burst: -1", "x.yaml:7: descriptors[0].rate_limit.burst: want a whole number from 0 to 2147483647"},
		{"algorithm: warm-up", "x.yaml:5: descriptors[0].rate_limit: core: limit WarmUp 0s: the WarmUp algorithm needs a warm-up period"},
		{"limits: [{unit: second, requests_per_unit: 3}]", "x.yaml:7: descriptors[0].rate_limit.limits[0]: the same rate as descriptors[0].rate_limit (3 per second)"},
		{"limits: [{unit: second, requests_per_unit: 4, name: x}]", `x.yaml:7: descriptors[0].rate_limit.limits[0].name: unknown key here; it belongs in rate_limit or one of its replaces`},
		{"unlimited: true\n      limits: []", "x.yaml:6: descriptors[0].rate_limit.limits: unlimited: true takes no limits"},
	} {
		yaml := "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 3\n      " + tc.yaml + "\n"
		if strings.Contains(tc.yaml, "unit: year") {
			yaml = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      " + tc.yaml + "\n"
		}
		if strings.HasPrefix(tc.yaml, "unlimited") {
			yaml = "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      " + tc.yaml + "\n"
		}
		_, err := Parse("x.yaml", []byte(yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\ngot  %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestLoad: a directory of files, the bad one kept out, duplicate domains
// reported naming both files, merging as MERGE_DOMAIN_CONFIG does.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n    rate_limit: {unit: minute, requests_per_unit: 10}\n")
	writeFile(t, filepath.Join(dir, "b.yml"), "domain: test-domain\ndescriptors:\n  - key: key2\n    value: value2\n    rate_limit: {unit: minute, requests_per_unit: 20}\n")
	writeFile(t, filepath.Join(dir, "c.yaml"), "domain: other\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight}\n")
	writeFile(t, filepath.Join(dir, "d.yaml"), "domain: fine\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n")
	writeFile(t, filepath.Join(dir, "README.md"), "not yaml")
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), "not: [yaml")
	if err := os.Mkdir(filepath.Join(dir, "..2026_01_01"), 0o755); err != nil {
		t.Fatal(err)
	}

	c, errs := Load(dir)
	if len(errs) != 2 {
		t.Fatalf("errors %v, want 2", errs)
	}
	if got := errs[0].Error(); !strings.HasPrefix(got, filepath.Join(dir, "b.yml")+":1: domain: domain \"test-domain\" is also configured by "+filepath.Join(dir, "a.yaml")) {
		t.Errorf("duplicate domain: %s", got)
	}
	if got := errs[1].Error(); !strings.HasPrefix(got, filepath.Join(dir, "c.yaml")+":4: descriptors[0].rate_limit.unit: invalid rate limit unit \"fortnight\"") {
		t.Errorf("bad file: %s", got)
	}
	if c.Match("test-domain", e("key1=value1")) == nil || c.Match("test-domain", e("key2=value2")) != nil {
		t.Error("a.yaml should be in force, b.yml out")
	}
	if c.Match("fine", e("k=x")) == nil || c.Domain("other") != nil || len(c.Domains()) != 2 {
		t.Error("d.yaml should be in force, c.yaml out")
	}
	if err := Check(dir); err == nil || !strings.Contains(err.Error(), "b.yml") || !strings.Contains(err.Error(), "c.yaml") {
		t.Errorf("Check: %v", err)
	}

	os.Remove(filepath.Join(dir, "c.yaml"))
	c, errs = Load(dir, MergeDomains())
	if len(errs) != 0 {
		t.Fatalf("merging: %v", errs)
	}
	if c.Match("test-domain", e("key1=value1")) == nil || c.Match("test-domain", e("key2=value2")).RequestsPerUnit != 20 {
		t.Error("merged domain lacks a file's descriptors")
	}
	writeFile(t, filepath.Join(dir, "e.yaml"), "domain: test-domain\ndescriptors:\n  - key: key1\n    value: value1\n")
	if err := Check(dir, MergeDomains()); err == nil || !strings.Contains(err.Error(), "e.yaml:3: descriptors: duplicate descriptor test-domain.key1_value1 (also at "+filepath.Join(dir, "a.yaml")+":3)") {
		t.Errorf("merge conflict: %v", err)
	}

	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, MergeDomains()); err == nil || !strings.Contains(err.Error(), "sub: a subdirectory") {
		t.Errorf("subdirectory: %v", err)
	}
	if err := Check(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no configuration files") {
		t.Errorf("empty directory: %v", err)
	}
	if err := Check(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing directory: no error")
	}
}
