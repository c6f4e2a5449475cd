package rlsxds

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

type (
	desc   = rlsconfv3.RateLimitDescriptor
	policy = rlsconfv3.RateLimitPolicy
)

// sameRules fails t unless a and b have the same rules, where they are
// defined aside.
func sameRules(t *testing.T, a, b *rlsconfig.Domain) {
	t.Helper()
	ra, rb := a.Rules(), b.Rules()
	if len(ra) != len(rb) {
		t.Fatalf("%d rules, want %d", len(ra), len(rb))
	}
	for i := range ra {
		x, y := *ra[i], *rb[i]
		x.File, x.Line, y.File, y.Line = "", 0, "", 0
		// Where rate_limit stands (its line, for errors) is a file's
		// alone: compared as text without it.
		if gx, gy := noLine(fmt.Sprintf("%+v", x)), noLine(fmt.Sprintf("%+v", y)); gx != gy {
			t.Errorf("rule %d:\n got %s\nwant %s", i, gx, gy)
		}
	}
}

var limitLine = regexp.MustCompile(`limitLine:\d+ `)

func noLine(s string) string { return limitLine.ReplaceAllString(s, "") }

// TestConvertMatchesYAML converts resources and parses the YAML files of
// the same content: the rules must be the same, and match the same
// requests under the same keys.
func TestConvertMatchesYAML(t *testing.T) {
	meta, err := structpb.NewStruct(map[string]any{"tier": "gold", "weight": 2, "share": 0.5, "tags": []any{"a", true}, "none": nil, "sub": map[string]any{"x": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		rc    *rlsconfv3.RateLimitConfig
		yaml  string
		probe [][]rlsconfig.Entry
	}{
		{
			// envoyproxy/ratelimit's provider test, "limits with deeper
			// xDS config update".
			name: "deeper",
			rc: &rlsconfv3.RateLimitConfig{Name: "foo", Domain: "foo", Descriptors: []*desc{
				{Key: "k1", Value: "v1", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: 10}, Descriptors: []*desc{
					{Key: "k2", RateLimit: &policy{Unlimited: true}},
					{Key: "k2", Value: "v2", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 15}},
				}},
				{Key: "j1", Value: "v2", RateLimit: &policy{Unlimited: true}, Descriptors: []*desc{
					{Key: "j2", RateLimit: &policy{Unlimited: true}},
					{Key: "j2", Value: "v2", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_DAY, RequestsPerUnit: 15}, ShadowMode: true, QuotaMode: true},
				}},
			}},
			yaml: `
domain: foo
descriptors:
  - key: k1
    value: v1
    rate_limit: {unit: minute, requests_per_unit: 10}
    descriptors:
      - key: k2
        rate_limit: {unlimited: true}
      - key: k2
        value: v2
        rate_limit: {unit: hour, requests_per_unit: 15}
  - key: j1
    value: v2
    rate_limit: {unlimited: true}
    descriptors:
      - key: j2
        rate_limit: {unlimited: true}
      - key: j2
        value: v2
        rate_limit: {unit: day, requests_per_unit: 15}
        shadow_mode: true
        quota_mode: true
`,
			probe: [][]rlsconfig.Entry{
				{{Key: "k1", Value: "v1"}},
				{{Key: "k1", Value: "v1"}, {Key: "k2", Value: "x"}},
				{{Key: "k1", Value: "v1"}, {Key: "k2", Value: "v2"}},
				{{Key: "j1", Value: "v2"}, {Key: "j2", Value: "v2"}},
				{{Key: "j1", Value: "v3"}},
			},
		},
		{
			name: "every field and unit",
			rc: &rlsconfv3.RateLimitConfig{Name: "all", Domain: "all", Descriptors: []*desc{
				{Key: "s", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_SECOND, RequestsPerUnit: 1, Name: "per-second"}},
				{Key: "m", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: 2, Replaces: []*rlsconfv3.RateLimitReplace{{Name: "per-second"}, {Name: "other"}}}},
				{Key: "h", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 3}, DetailedMetric: true},
				{Key: "d", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_DAY, RequestsPerUnit: 4}, Metadata: meta},
				{Key: "w", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_WEEK, RequestsPerUnit: 5}},
				{Key: "mo", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MONTH, RequestsPerUnit: 6}},
				{Key: "y", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_YEAR, RequestsPerUnit: 4294967295}},
				{Key: "zero", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_SECOND}},
				{Key: "path", Value: "/api/*", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: 7}},
				{Key: "path", Value: "true", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: 8}},
				{Key: "norule", Descriptors: []*desc{{Key: "leaf", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: 9}}}},
			}},
			yaml: `
domain: all
descriptors:
  - key: s
    rate_limit: {unit: second, requests_per_unit: 1, name: per-second}
  - key: m
    rate_limit: {unit: minute, requests_per_unit: 2, replaces: [{name: per-second}, {name: other}]}
  - key: h
    rate_limit: {unit: hour, requests_per_unit: 3}
    detailed_metric: true
  - key: d
    rate_limit: {unit: day, requests_per_unit: 4}
    metadata: {tier: gold, weight: 2, share: 0.5, tags: [a, true], none: null, sub: {x: y}}
  - key: w
    rate_limit: {unit: week, requests_per_unit: 5}
  - key: mo
    rate_limit: {unit: month, requests_per_unit: 6}
  - key: y
    rate_limit: {unit: year, requests_per_unit: 4294967295}
  - key: zero
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 7}
  - key: path
    value: "true"
    rate_limit: {unit: minute, requests_per_unit: 8}
  - key: norule
    descriptors:
      - key: leaf
        rate_limit: {unit: minute, requests_per_unit: 9}
`,
			probe: [][]rlsconfig.Entry{
				{{Key: "h", Value: "x"}},
				{{Key: "path", Value: "/api/users"}},
				{{Key: "path", Value: "true"}},
				{{Key: "norule", Value: "a"}, {Key: "leaf", Value: "b"}},
				{{Key: "norule", Value: "a"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Domain("resource", tc.rc)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rlsconfig.Parse("file.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != want.Name || got.File != "resource" {
				t.Errorf("domain %q file %q, want %q, resource", got.Name, got.File, want.Name)
			}
			sameRules(t, got, want)
			for _, p := range tc.probe {
				g, w := got.Match(p), want.Match(p)
				if (g == nil) != (w == nil) {
					t.Errorf("%v: rule %v, want %v", p, g != nil, w != nil)
					continue
				}
				if g != nil && (g.FullKey != w.FullKey || g.Key(p) != w.Key(p) || g.StatsKey(p) != w.StatsKey(p)) {
					t.Errorf("%v: %s %s %s, want %s %s %s", p, g.FullKey, g.Key(p), g.StatsKey(p), w.FullKey, w.Key(p), w.StatsKey(p))
				}
			}
		})
	}
}

// nested returns descriptors n deep, a limit at the bottom.
func nested(n int) []*desc {
	d := &desc{Key: "k", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_SECOND, RequestsPerUnit: 1}}
	for i := 1; i < n; i++ {
		d = &desc{Key: "k", Descriptors: []*desc{d}}
	}
	return []*desc{d}
}

// TestConvertErrors checks the error of each mistake, which names the
// resource and the field.
func TestConvertErrors(t *testing.T) {
	one := func(name, domain string, ds ...*desc) []*rlsconfv3.RateLimitConfig {
		return []*rlsconfv3.RateLimitConfig{{Name: name, Domain: domain, Descriptors: ds}}
	}
	rl := func(unit rlsconfv3.RateLimitUnit, rpu uint32) *policy {
		return &policy{Unit: unit, RequestsPerUnit: rpu}
	}
	for _, tc := range []struct {
		name  string
		rcs   []*rlsconfv3.RateLimitConfig
		merge bool
		want  string
	}{
		{"empty domain", one("r", ""), false,
			`RateLimitConfig "r": domain: the domain is empty; every file needs one (domain: name)`},
		{"unnamed resource", one("", ""), false,
			`RateLimitConfig #0: domain: the domain is empty; every file needs one (domain: name)`},
		{"empty key", one("r", "d", &desc{Value: "v"}), false,
			`RateLimitConfig "r": descriptors[0].key: the descriptor has an empty key; every descriptor needs one (key: name)`},
		{"unknown unit", one("r", "d", &desc{Key: "k", RateLimit: rl(rlsconfv3.RateLimitUnit_UNKNOWN, 5)}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.unit: invalid rate limit unit "UNKNOWN"; use second, minute, hour, day, week, month or year (or unlimited: true)`},
		{"unit outside the enum", one("r", "d", &desc{Key: "k", RateLimit: rl(99, 5)}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.unit: invalid rate limit unit "99"; use second, minute, hour, day, week, month or year (or unlimited: true)`},
		{"unlimited with a unit", one("r", "d", &desc{Key: "k", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_HOUR, Unlimited: true}}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.unit: unlimited: true takes no unit; remove one of them`},
		{"empty replaces", one("r", "d", &desc{Key: "k", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 1, Replaces: []*rlsconfv3.RateLimitReplace{{}}}}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.replaces[0].name: an empty replaces entry; name the rate_limit it replaces`},
		{"replaces itself", one("r", "d", &desc{Key: "k", RateLimit: &policy{Unit: rlsconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 1, Name: "n", Replaces: []*rlsconfv3.RateLimitReplace{{Name: "n"}}}}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.replaces[0].name: replaces its own rate_limit's name "n"; a rule cannot replace itself`},
		{"duplicate descriptor", one("r", "d", &desc{Key: "a", Descriptors: []*desc{{Key: "b", Value: "c"}, {Key: "b_c"}}}), false,
			`RateLimitConfig "r": descriptors[0].descriptors[1]: duplicate descriptor d.a.b_c (also descriptors[0].descriptors[0]): a key and value may appear once per level, and envoyproxy/ratelimit joins them as key_value, so key: a_b and key: a, value: b are the same`},
		{"every mistake, in order", one("r", "d", &desc{Key: "a", RateLimit: rl(rlsconfv3.RateLimitUnit_UNKNOWN, 1)}, &desc{Key: "a"}), false,
			`RateLimitConfig "r": descriptors[0].rate_limit.unit: invalid rate limit unit "UNKNOWN"; use second, minute, hour, day, week, month or year (or unlimited: true)` + "\n" +
				`RateLimitConfig "r": descriptors[1]: duplicate descriptor d.a (also descriptors[0]): a key and value may appear once per level, and envoyproxy/ratelimit joins them as key_value, so key: a_b and key: a, value: b are the same`},
		{"too deep", one("r", "d", nested(33)...), false,
			`RateLimitConfig "r": descriptors[0]` + strings.Repeat(".descriptors[0]", 31) + `.descriptors: descriptors nested more than 32 deep`},
		{"one error per resource",
			[]*rlsconfv3.RateLimitConfig{{Name: "a", Domain: ""}, {Name: "b", Domain: "ok"}, {Name: "c", Domain: "d", Descriptors: []*desc{{}}}}, false,
			`RateLimitConfig "a": domain: the domain is empty; every file needs one (domain: name)` + "\n" +
				`RateLimitConfig "c": descriptors[0].key: the descriptor has an empty key; every descriptor needs one (key: name)`},
		{"two resources of one domain",
			[]*rlsconfv3.RateLimitConfig{rateLimit("a", "d", "k", "1", 1, rlsconfv3.RateLimitUnit_SECOND), rateLimit("b", "d", "k", "2", 1, rlsconfv3.RateLimitUnit_SECOND)}, false,
			`RateLimitConfig "b": domain: domain "d" is also configured by RateLimitConfig "a"; give each file its own domain, or merge them (MERGE_DOMAIN_CONFIG)`},
		{"merged resources define one descriptor",
			[]*rlsconfv3.RateLimitConfig{rateLimit("a", "d", "k", "1", 1, rlsconfv3.RateLimitUnit_SECOND), rateLimit("b", "e", "k", "1", 1, rlsconfv3.RateLimitUnit_SECOND), rateLimit("c", "d", "k", "1", 2, rlsconfv3.RateLimitUnit_SECOND)}, true,
			`RateLimitConfig "c": descriptors[0]: duplicate descriptor d.k_1 (also descriptors[0] of RateLimitConfig "a"); when resources merge a domain, each top-level descriptor must be in one of them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Convert(tc.rcs, tc.merge)
			if err == nil || c != nil {
				t.Fatalf("Convert = %v, %v; want an error", c, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %s\nwant %s", err, tc.want)
			}
			var ce *rlsconfig.Error
			if !errors.As(err, &ce) {
				t.Errorf("%v holds no *rlsconfig.Error", err)
			}
		})
	}
}

func TestConvertMerge(t *testing.T) {
	rcs := []*rlsconfv3.RateLimitConfig{
		rateLimit("foo-1", "foo", "k1", "v1", 10, rlsconfv3.RateLimitUnit_MINUTE),
		rateLimit("foo-2", "foo", "k1", "v2", 100, rlsconfv3.RateLimitUnit_MINUTE),
	}
	c, err := Convert(rcs, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ value, want string }{{"v1", "10/minute"}, {"v2", "100/minute"}, {"v3", "none"}} {
		if got := limitOf(c, "foo", rlsconfig.Entry{Key: "k1", Value: tc.value}); got != tc.want {
			t.Errorf("k1=%s: %s, want %s", tc.value, got, tc.want)
		}
	}
}

func TestConvertEmpty(t *testing.T) {
	c, err := Convert(nil, false)
	if err != nil || len(c.Domains()) != 0 {
		t.Fatalf("Convert(nil) = %d domains, %v; want none, nil", len(c.Domains()), err)
	}
}

// TestConvertAny reads a response's resources, refusing those of another
// type and those that do not decode.
func TestConvertAny(t *testing.T) {
	good, err := anypb.New(rateLimit("a", "d", "k", "v", 1, rlsconfv3.RateLimitUnit_SECOND))
	if err != nil {
		t.Fatal(err)
	}
	other, err := anypb.New(&rlsconfv3.RateLimitPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	broken := &anypb.Any{TypeUrl: TypeURL, Value: []byte{0xff}}
	w := &Watcher{}
	if c, err := w.convert([]*anypb.Any{good}); err != nil || c.Domain("d") == nil {
		t.Fatalf("convert(good) = %v", err)
	}
	_, err = w.convert([]*anypb.Any{good, other, broken})
	msgs := strings.Split(err.Error(), "\n")
	if len(msgs) != 2 ||
		msgs[0] != `rlsxds: resources[1] has type "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitPolicy"; the server must send type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig` ||
		!strings.HasPrefix(msgs[1], "rlsxds: resources[2] does not decode: ") {
		t.Fatalf("error %q", err)
	}
}

// TestFromDataMatchesParse gives rlsconfig.FromData what no resource
// carries (value_to_metric, share_threshold) and checks it against the
// YAML of the same content, errors included.
func TestFromDataMatchesParse(t *testing.T) {
	rl := &rlsconfig.RateLimitData{Unit: "MINUTE", RequestsPerUnit: 5}
	for _, tc := range []struct {
		name string
		data rlsconfig.DomainData
		yaml string
	}{
		{"value_to_metric and share_threshold", rlsconfig.DomainData{Domain: "d", Descriptors: []rlsconfig.DescriptorData{
			{Key: "route", Value: "api/*", ShareThreshold: true, RateLimit: rl},
			{Key: "user", ValueToMetric: true, Descriptors: []rlsconfig.DescriptorData{{Key: "path", RateLimit: rl}}},
		}}, `
domain: d
descriptors:
  - {key: route, value: api/*, share_threshold: true, rate_limit: {unit: MINUTE, requests_per_unit: 5}}
  - key: user
    value_to_metric: true
    descriptors:
      - {key: path, rate_limit: {unit: MINUTE, requests_per_unit: 5}}
`},
		{"share_threshold without a wildcard", rlsconfig.DomainData{Domain: "d", Descriptors: []rlsconfig.DescriptorData{
			{Key: "route", Value: "api", ShareThreshold: true, RateLimit: rl},
		}}, `
domain: d
descriptors:
  - {key: route, value: api, share_threshold: true, rate_limit: {unit: MINUTE, requests_per_unit: 5}}
`},
		{"no unit", rlsconfig.DomainData{Domain: "d", Descriptors: []rlsconfig.DescriptorData{
			{Key: "k", RateLimit: &rlsconfig.RateLimitData{RequestsPerUnit: 1}},
		}}, `
domain: d
descriptors:
  - {key: k, rate_limit: {requests_per_unit: 1}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gerr := rlsconfig.FromData("data", &tc.data)
			want, werr := rlsconfig.Parse("file.yaml", []byte(tc.yaml))
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("FromData error %v, Parse error %v", gerr, werr)
			}
			if werr != nil {
				var ge, we *rlsconfig.Error
				if !errors.As(gerr, &ge) || !errors.As(werr, &we) {
					t.Fatalf("errors %v, %v are not *rlsconfig.Error", gerr, werr)
				}
				if ge.File != "data" || ge.Line != 0 || ge.Field != we.Field || ge.Err.Error() != we.Err.Error() {
					t.Fatalf("FromData: %v\n   Parse: %v", gerr, werr)
				}
				return
			}
			sameRules(t, got, want)
		})
	}
	if _, err := rlsconfig.FromData("data", nil); err == nil || err.Error() != "data: no domain data" {
		t.Errorf("FromData(nil) = %v", err)
	}
}

// TestConvertDepth takes descriptors as deep as YAML files may nest them,
// and refuses deeper ones, however deep, at the same place.
func TestConvertDepth(t *testing.T) {
	d, err := Domain("r", &rlsconfv3.RateLimitConfig{Domain: "d", Descriptors: nested(32)})
	if err != nil || len(d.Rules()) != 1 {
		t.Fatalf("32 deep: %v", err)
	}
	want := `r: descriptors[0]` + strings.Repeat(".descriptors[0]", 31) + `.descriptors: descriptors nested more than 32 deep`
	for _, n := range []int{33, 10000} {
		if _, err := Domain("r", &rlsconfv3.RateLimitConfig{Domain: "d", Descriptors: nested(n)}); err == nil || err.Error() != want {
			t.Errorf("%d deep: %v", n, err)
		}
	}
}
