package rules

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/keyfunc"
)

func TestParseSample(t *testing.T) {
	data, err := os.ReadFile("testdata/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := parse("rules.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Name: "login", Line: 3, Paths: []string{"/login"}, Methods: []string{"POST"},
			Limits: []core.Limit{{Events: 5, Period: time.Minute, Burst: 5, Name: "login", Algorithm: core.GCRA}}, Key: []string{"ip"}},
		{Name: "upload", Line: 9, Paths: []string{"/upload"}, Methods: []string{"PUT", "POST"},
			Limits: []core.Limit{{Events: 1000, Period: time.Minute, Burst: 1000, Name: "upload"}},
			Key:    []string{"header:X-Api-Key"}, CostUnit: 1024, CostUnknown: -1},
		{Name: "api", Line: 15, Paths: []string{"/api/*"},
			Limits: []core.Limit{{Events: 10, Period: time.Second, Burst: 10, Name: "api-1s"}, {Events: 10000, Period: time.Hour, Burst: 10000, Name: "api-hourly"}},
			Key:    []string{"ip", "header:X-Api-Key"}, Shadow: true, ShadowHeaders: true},
		{Name: "search", Line: 22, GRPC: []string{"/pkg.Search/Query", "/pkg.Index/*"},
			Limits: []core.Limit{{Events: 100, Period: time.Second, Burst: 100, Name: "search", Algorithm: core.SlidingWindow}}, Key: []string{"ip"}, Cost: 2},
		{Name: "reports", Line: 28, Paths: []string{"/reports/*"},
			Limits: []core.Limit{{Events: 10, Period: time.Second, Burst: 10, Name: "reports", Algorithm: core.LeakyBucket, MaxDelay: 500 * time.Millisecond}}, Key: []string{"global"}},
		{Name: "cold-start", Line: 35, Paths: []string{"/warm/*"},
			Limits: []core.Limit{{Events: 100, Period: time.Second, Burst: 100, Name: "cold-start", Algorithm: core.WarmUp, WarmUp: 30 * time.Second, ColdFactor: 3}}, Key: []string{"ip"}},
	}
	if len(rs) != len(want) {
		t.Fatalf("got %d rules, want %d", len(rs), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(rs[i], want[i]) {
			t.Errorf("rule %d:\n got %+v\nwant %+v", i, rs[i], want[i])
		}
	}
	// The sample compiles, too.
	if _, err := New("rules.yaml", data); err != nil {
		t.Fatal(err)
	}
}

// TestParseErrors: every error names the file, the line and the field.
func TestParseErrors(t *testing.T) {
	const ok = `rules:
  - name: a
    match: {paths: ["/a"]}
    limit: "1/s"
`
	tests := []struct {
		name, src, want string
	}{
		{"empty", ``, `r.yaml: the file is empty; it needs a rules: list`},
		{"syntax", "rules: []\nb: 2\nc 2\nd: 3\n", `r.yaml:3: yaml: could not find expected ':'`},
		{"two documents", ok + "---\nrules: []\n", `r.yaml:5: a second YAML document`},
		{"not a mapping", "- a\n", `r.yaml:1: want a mapping (key: value lines), got a list`},
		{"unknown top field", "rule: []\n", `r.yaml:1: rule: unknown field; use rules`},
		{"no rules", "{}\n", `r.yaml:1: no rules: list`},
		{"rules not a list", "rules: 3\n", `r.yaml:1: rules: want a list of rules, got "3"`},
		{"rule not a mapping", "rules:\n  - x\n", `r.yaml:2: rules[0]: want a mapping`},
		{"unknown rule field", ok + "    burst: 3\n", `r.yaml:5: rules[0].burst: unknown field; use name, match,`},
		{"repeated field", ok + "    limit: \"2/s\"\n", `r.yaml:5: rules[0].limit: given twice (first at line 4)`},
		{"no name", "rules:\n  - match: {paths: [/a]}\n    limit: 1/s\n", `r.yaml:2: rules[0]: no name; every rule needs one`},
		{"bad name", "rules:\n  - name: a b\n    match: {paths: [/a]}\n    limit: 1/s\n", `r.yaml:2: rules[0].name: "a b": use 1 to 64 letters`},
		{"name a list", "rules:\n  - name: [a]\n", `r.yaml:2: rules[0].name: want a single value, got a list`},
		{"duplicate names", ok + strings.Replace(ok, "rules:\n", "", 1), `r.yaml:5: rules[1].name: "a" is the name of the rule at line 2 too; names must be distinct`},
		{"no match", "rules:\n  - name: a\n    limit: 1/s\n", `r.yaml:2: rules[0]: no match; say which requests`},
		{"empty match", "rules:\n  - name: a\n    match: {}\n    limit: 1/s\n", `r.yaml:3: rules[0].match: matches nothing; give paths, grpc or both`},
		{"unknown match field", "rules:\n  - name: a\n    match: {path: /a}\n", `r.yaml:3: rules[0].match.path: unknown field; use paths, methods, grpc`},
		{"relative path", "rules:\n  - name: a\n    match:\n      paths: [/a, b]\n", `r.yaml:4: rules[0].match.paths[1]: "b": a path starts with /`},
		{"star inside", "rules:\n  - name: a\n    match: {paths: [/a*b]}\n", `r.yaml:3: rules[0].match.paths[0]: "/a*b": * may only end a prefix`},
		{"empty paths", "rules:\n  - name: a\n    match: {paths: []}\n", `r.yaml:3: rules[0].match.paths: the list is empty`},
		{"lower-case method", "rules:\n  - name: a\n    match: {paths: [/a], methods: [get]}\n", `r.yaml:3: rules[0].match.methods[0]: "get" is not an HTTP method`},
		{"methods alone", "rules:\n  - name: a\n    match: {methods: [GET]}\n", `r.yaml:3: rules[0].match.methods: methods need paths`},
		{"bad grpc", "rules:\n  - name: a\n    match: {grpc: [pkg.S/M]}\n", `r.yaml:3: rules[0].match.grpc[0]: "pkg.S/M": want a full method`},
		{"no limit", "rules:\n  - name: a\n    match: {paths: [/a]}\n", `r.yaml:2: rules[0]: no limit; give limit:`},
		{"bad limit", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 5/fortnight\n", `r.yaml:4: rules[0].limit: core: limit "5/fortnight": period "fortnight" is not a unit (s, min, h, d) or a positive duration like 10s`},
		{"bad burst", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 5/s burst=x\n", `r.yaml:4: rules[0].limit: core: limit "5/s burst=x": burst "x": want a whole number from 0 to 2147483647`},
		{"negative burst", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 5/s burst=-5\n", `r.yaml:4: rules[0].limit: core: limit "5/s burst=-5": burst "-5": want a whole number from 0 to 2147483647`},
		{"words for a rate", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 5 per second\n", `r.yaml:4: rules[0].limit: core: limit "5 per second": no '/'; write events/period, like "5/second"`},
		{"limit and limits", ok + "    limits: [1/s]\n", `r.yaml:5: rules[0].limits: give limit or limits, not both`},
		{"bad layer", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limits:\n      - 1/s\n      - 0/h\n", `r.yaml:6: rules[0].limits[1]: core: limit "0/h": events "0": want a whole number from 1 to 2147483647`},
		{"negative layer", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limits:\n      - 1/s\n      - -5/h\n", `r.yaml:6: rules[0].limits[1]: core: limit "-5/h": events "-5": want a whole number from 1 to 2147483647`},
		{"same layer twice", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limits: [1/s, 1/s]\n", `r.yaml:4: rules[0].limits[1]: limits 0 and 1 are both named "a-1-per-1s"; add name= to one`},
		{"unknown algorithm", ok + "    algorithm: token_bucket\n", `r.yaml:5: rules[0].algorithm: unknown algorithm "token_bucket"; use token-bucket, gcra,`},
		{"warm-up without it", ok + "    warm-up: 10s\n", `r.yaml:5: rules[0].warm-up: only the warm-up algorithm has a warm-up period`},
		{"warm-up missing", ok + "    algorithm: warm-up\n", `r.yaml:5: rules[0].warm-up: the warm-up algorithm needs warm-up`},
		{"bad max-delay", ok + "    algorithm: leaky-bucket\n    max-delay: soon\n", `r.yaml:6: rules[0].max-delay: "soon": want a positive duration`},
		{"bad cold factor", ok + "    algorithm: warm-up\n    warm-up: 1s\n    cold-factor: 0.5\n", `r.yaml:7: rules[0].cold-factor: want a number from 1 to 1000, got "0.5"`},
		{"algorithm twice", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s algorithm=gcra\n    algorithm: fixed-window\n", `r.yaml:5: rules[0].algorithm: limit 0 names its algorithm (1/s name=a algorithm=gcra); give the algorithm in the rule or in its limits, not both`},
		{"unknown key", ok + "    key: ip+cookie:x\n", `r.yaml:5: rules[0].key: "cookie:x": use ip, header:NAME, path, method, global`},
		{"bad header", ok + "    key: header:X Api\n", `r.yaml:5: rules[0].key: "X Api": a header name is letters, digits, - and _`},
		{"key twice", ok + "    key: ip+ip\n", `r.yaml:5: rules[0].key: "ip" is given twice`},
		{"global joined", ok + "    key: global+ip\n", `r.yaml:5: rules[0].key: global is one key for every request`},
		{"path key on grpc", "rules:\n  - name: a\n    match: {grpc: ['*']}\n    limit: 1/s\n    key: path\n", `r.yaml:5: rules[0].key: path has no meaning for gRPC`},
		{"zero cost", ok + "    cost: 0\n", `r.yaml:5: rules[0].cost: want a whole number of units from 1 up`},
		{"bad size", ok + "    cost: {content-length: 1KB2}\n", `r.yaml:5: rules[0].cost.content-length: "1KB2": unknown unit "KB2"`},
		{"size without unit field", ok + "    cost: {unknown: 3}\n", `r.yaml:5: rules[0].cost: give content-length:`},
		{"bad unknown", ok + "    cost: {content-length: 1KiB, unknown: -2}\n", `r.yaml:5: rules[0].cost.unknown: want refuse or the units`},
		{"grpc content length", "rules:\n  - name: a\n    match: {grpc: ['*']}\n    limit: 1/s\n    cost:\n      content-length: 1KiB\n", `r.yaml:6: rules[0].cost.content-length: gRPC calls have no content length`},
		{"shadow not bool", ok + "    shadow: yes please\n", `r.yaml:5: rules[0].shadow: want true or false, got "yes please"`},
		{"shadow headers alone", ok + "    shadow-headers: true\n", `r.yaml:5: rules[0].shadow-headers: only means something with shadow: true`},
		{"second rule", ok + "  - name: b\n    match: {paths: [/b]}\n    limit: \"1/s\"\n    algorithm: fast\n", `r.yaml:8: rules[1].algorithm: unknown algorithm "fast"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("r.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.File != "r.yaml" {
				t.Errorf("error %T %v is not an *Error naming the file", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error:\n %s\nwant prefix:\n %s", err, tt.want)
			}
		})
	}
}

// TestCompileErrors: limits that parse but that core refuses are reported
// at the rule's line, and a rejected file changes nothing.
func TestCompileErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"log too long", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 100000/s\n    algorithm: sliding-log\n", `r.yaml:5: rules[0].algorithm: core: SlidingLog: 100000 events`},
		{"log too long in the limit", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 100000/s algorithm=sliding-log\n", `r.yaml:4: rules[0].limit: core: limit "100000/s algorithm=sliding-log": SlidingLog: 100000 events`},
		{"unregistered key", "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n    key: tenant\n", `r.yaml:2: rules[0].key: unknown key "tenant"; the built-in keys are ip, header:NAME, path, method and global, and rules.WithKey registered none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("r.yaml", []byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want prefix %q", err, tt.want)
			}
		})
	}
}

// TestLimitsCarryTheirPolicy: a limit string may name its own algorithm
// and settings, so that the layers of one rule run different algorithms;
// the rule's algorithm fields give every limit theirs.
func TestLimitsCarryTheirPolicy(t *testing.T) {
	rs, err := parse("r.yaml", []byte(`rules:
  - name: api
    match: {paths: [/api/*]}
    limits: ["10/s algorithm=gcra", "1000/h algorithm=fixed-window", "5/s max-delay=2s"]
  - name: warm
    match: {paths: [/warm]}
    limits: [100/s, 1000/min]
    algorithm: warm-up
    warm-up: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]core.Limit{{
		core.PerSecond(10).WithName("api-10-per-1s").WithAlgorithm(core.GCRA),
		core.PerHour(1000).WithName("api-1h").WithAlgorithm(core.FixedWindow),
		core.PerSecond(5).WithName("api-5-per-1s").WithMaxDelay(2 * time.Second),
	}, {
		core.PerSecond(100).WithName("warm-1s").WithWarmUp(30*time.Second, 0),
		core.PerMinute(1000).WithName("warm-1min").WithWarmUp(30*time.Second, 0),
	}}
	for i, r := range rs {
		if !reflect.DeepEqual(r.Limits, want[i]) {
			t.Errorf("rule %s: limits\n %v\nwant\n %v", r.Name, r.Limits, want[i])
		}
	}
	s, err := New("r.yaml", []byte("rules:\n  - name: api\n    match: {paths: [/api/*]}\n    limits: [\"10/s algorithm=gcra\", \"1000/h algorithm=fixed-window\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := s.Table().Rules()[0].Limiter.(*core.Stack)
	if !ok || st.Policies()[0].Algorithm != core.GCRA || st.Policies()[1].Algorithm != core.FixedWindow {
		t.Fatalf("limiter %T, want a stack of a GCRA and a fixed window", s.Table().Rules()[0].Limiter)
	}
}

func TestOptionErrors(t *testing.T) {
	const src = "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n"
	for _, opt := range []Option{WithKey("ip", nil), WithKey("Bad", nil), WithKey("path", keyfunc.Route()), WithOnReload(nil)} {
		if _, err := New("r.yaml", []byte(src), opt); err == nil || !strings.HasPrefix(err.Error(), "rules: ") {
			t.Errorf("error %v, want one starting rules: ", err)
		}
	}
}

// TestLayerNames: the layers of a stacked rule are named after the rule and
// their period, or their rate where two share a period; a name= of the
// layer's own wins; names fit core's 64 bytes and stay unique.
func TestLayerNames(t *testing.T) {
	long := strings.Repeat("n", 64)
	tests := []struct {
		name, rule, limits string
		want               []string
	}{
		{"periods", "api", `["10/s", "1000/h"]`, []string{"api-1s", "api-1h"}},
		{"every unit", "api", `["1/500ms", "1/90s", "1/min", "1/2h", "1/d", "1/36h"]`, []string{"api-500ms", "api-90s", "api-1min", "api-2h", "api-1d", "api-36h"}},
		{"own name", "api", `["10/s name=burst", "1000/h"]`, []string{"burst", "api-1h"}},
		{"shared period", "api", `["10/s", "100/s burst=20", "1000/h"]`, []string{"api-10-per-1s", "api-100-per-1s", "api-1h"}},
		{"long rule name", long, `["10/s", "1000/h"]`, []string{long[:61] + "-1s", long[:61] + "-1h"}},
		{"long, shared period", long, `["10/s", "100/s"]`, []string{long[:54] + "-10-per-1s", long[:53] + "-100-per-1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "rules:\n  - name: " + tt.rule + "\n    match: {paths: [/a]}\n    limits: " + tt.limits + "\n"
			rs, err := parse("r.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range rs[0].Limits {
				got = append(got, l.Name)
				if len(l.Name) > 64 {
					t.Errorf("%q is longer than 64 bytes", l.Name)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("names %q, want %q", got, tt.want)
			}
			// The names are valid core names: the rule compiles.
			if _, err := New("r.yaml", []byte(src), quietly); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLayerNamesInHeaders: clients see the readable names in
// RateLimit-Policy, and the same names after a reload that changes a
// layer's rate but not its period.
func TestLayerNamesInHeaders(t *testing.T) {
	const v1 = "rules:\n  - name: api\n    match: {paths: [/a]}\n    limits: [\"10/s\", \"1000/h\"]\n"
	s, err := New("r.yaml", []byte(v1), quietly)
	if err != nil {
		t.Fatal(err)
	}
	policy := func() string {
		w := httptest.NewRecorder()
		s.Middleware(ok).ServeHTTP(w, httptest.NewRequest("GET", "/a", nil))
		return w.Header().Get("RateLimit-Policy")
	}
	if got, want := policy(), `"api-1s";q=10;w=1, "api-1h";q=1000;w=3600`; got != want {
		t.Errorf("RateLimit-Policy %s, want %s", got, want)
	}
	if err := s.Apply([]byte(strings.Replace(v1, "10/s", "20/s", 1))); err != nil {
		t.Fatal(err)
	}
	if got, want := policy(), `"api-1s";q=20;w=1, "api-1h";q=1000;w=3600`; got != want {
		t.Errorf("after the reload RateLimit-Policy %s, want %s", got, want)
	}
}

// TestYAMLErrorLines: a YAML syntax error is reported at the line where
// the problem is, whatever kind of error the YAML decoder found (its
// scanner's or its parser's, which count lines differently) and wherever
// it is in the file: first line, middle, last, inside a nested mapping or
// a flow list, in a second document.
func TestYAMLErrorLines(t *testing.T) {
	const head = "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n" // 4 lines
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"bad indentation", "rules:\n  - name: a\n  bad: : x\n", 3, "did not find expected '-' indicator"},
		{"bad indentation later", head + "  - name: b\n    match: {paths: [/b]}\n   limit: 1/s\n", 7, "did not find expected '-' indicator"},
		{"unclosed flow list", "rules:\n  - name: a\n    match: [\n", 3, "did not find expected node content"},
		{"unclosed flow mapping", head + "  - name: b\n    match: {paths: [/b]\n    limit: 1/s\n", 6, "did not find expected ',' or '}'"},
		{"unclosed quote", "rules:\n  - name: a\n    limit: \"5/s\n", 3, "found unexpected end of stream"},
		{"tab", "rules:\n  - name: a\n\tlimit: x\n", 3, "found a tab character that violates indentation"},
		{"mapping in a scalar", "rules: []\nb: 2\n c: 3\n", 3, "mapping values are not allowed in this context"},
		{"no colon", "rules: []\nb: 2\nc 2\nd: 3\n", 3, "could not find expected ':'"},
		{"bad character", "rules: []\nb: @x\n", 2, "found character that cannot start any token"},
		{"first line", "rules: @\n", 1, "found character that cannot start any token"},
		{"first line, parser", "- a\nb: 1\n", 2, "did not find expected '-' indicator"},
		{"unknown alias", head + "    key: *nope\n", 5, "unknown anchor 'nope' referenced"},
		{"second document", head + "---\nrules: [\n", 6, "did not find expected node content"},
		{"no newline at the end", head + "  - name: b\n  bad: : x", 6, "did not find expected '-' indicator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse("r.yaml", []byte(tt.src))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v, want an *Error", err, err)
			}
			want := fmt.Sprintf("r.yaml:%d: yaml: %s", tt.line, tt.msg)
			if err.Error() != want {
				t.Errorf("error\n %s\nwant\n %s", err, want)
			}
		})
	}
}

// TestBurstZero: burst=0 in a rule's limit is the default burst, as in
// core.ParseLimit and the service's YAML: the rule is the one without it,
// so that a reload from one to the other keeps the rule's counts.
func TestBurstZero(t *testing.T) {
	rule := func(limit string) Rule {
		t.Helper()
		rs, err := parse("r.yaml", []byte("rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: "+limit+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	zero, none := rule("5/s burst=0"), rule("5/s")
	if !reflect.DeepEqual(zero, none) || zero.policy() != none.policy() || zero.Limits[0].EffectiveBurst() != 5 {
		t.Errorf("burst=0: %+v (policy %s); without: %+v (policy %s)", zero, zero.policy(), none, none.policy())
	}
}

// TestUnknownKey: a key that is neither built in nor registered is
// reported with every key the file could have used, so that a typo shows
// beside what was meant.
func TestUnknownKey(t *testing.T) {
	const src = "rules:\n  - name: a\n    match: {paths: [/a]}\n    limit: 1/s\n    key: ipp\n"
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"none registered", nil, `r.yaml:2: rules[0].key: unknown key "ipp"; the built-in keys are ip, header:NAME, path, method and global, and rules.WithKey registered none`},
		{"two registered", []Option{WithKey("user", keyfunc.Constant("u")), WithKey("tenant", keyfunc.Constant("t"))},
			`r.yaml:2: rules[0].key: unknown key "ipp"; the built-in keys are ip, header:NAME, path, method and global, and rules.WithKey registered tenant, user`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("r.yaml", []byte(src), tc.opts...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
