package rlsconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// e builds a request descriptor from "key=value" pairs.
func e(pairs ...string) []Entry {
	out := make([]Entry, len(pairs))
	for i, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		out[i] = Entry{k, v}
	}
	return out
}

// decision is what one request descriptor must get: the rule (by its
// FullKey; "" for none), its limit ("500/second", "unlimited"), its
// flags, and the keys.
type decision struct {
	d         []Entry
	rule      string
	limit     string
	shadow    bool
	replaces  string
	stats     string  // "" to skip
	sameKey   []Entry // a descriptor counting in the same state, or nil
	otherKey  []Entry // a descriptor counting in another state, or nil
	replaced  [][]Entry
	survivors string // with replaced: the FullKeys left, joined by " "
}

func limitText(r *Rule) string {
	if r.Unlimited {
		return "unlimited"
	}
	return strings.Join([]string{itoa(r.RequestsPerUnit), r.Unit.String()}, "/")
}

func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func checkDecisions(t *testing.T, d *Domain, ds []decision) {
	t.Helper()
	for _, want := range ds {
		r := d.Match(want.d)
		if want.replaced != nil {
			rules := []*Rule{r}
			for _, o := range want.replaced {
				rules = append(rules, d.Match(o))
			}
			Replace(rules)
			var left []string
			for _, r := range rules {
				if r != nil {
					left = append(left, r.FullKey)
				}
			}
			if got := strings.Join(left, " "); got != want.survivors {
				t.Errorf("%v with %v: rules applied %q, want %q", want.d, want.replaced, got, want.survivors)
			}
			continue
		}
		if want.rule == "" {
			if r != nil {
				t.Errorf("%v matched %s, want no rule", want.d, r.FullKey)
			}
			continue
		}
		if r == nil {
			t.Errorf("%v matched no rule, want %s", want.d, want.rule)
			continue
		}
		if r.FullKey != want.rule {
			t.Errorf("%v matched %s, want %s", want.d, r.FullKey, want.rule)
		}
		if got := limitText(r); got != want.limit {
			t.Errorf("%v: limit %s, want %s", want.d, got, want.limit)
		}
		if r.ShadowMode != want.shadow {
			t.Errorf("%v: shadow_mode %v, want %v", want.d, r.ShadowMode, want.shadow)
		}
		if got := strings.Join(r.Replaces, ","); got != want.replaces {
			t.Errorf("%v: replaces %q, want %q", want.d, got, want.replaces)
		}
		if want.stats != "" {
			if got := r.StatsKey(want.d); got != want.stats {
				t.Errorf("%v: stats key %q, want %q", want.d, got, want.stats)
			}
		}
		if want.sameKey != nil {
			o := d.Match(want.sameKey)
			if o != r || o.Key(want.sameKey) != r.Key(want.d) {
				t.Errorf("%v and %v count apart (%q, %q), want one count", want.d, want.sameKey, r.Key(want.d), o.Key(want.sameKey))
			}
		}
		if want.otherKey != nil {
			o := d.Match(want.otherKey)
			if o == nil || o.Key(want.otherKey) == r.Key(want.d) {
				t.Errorf("%v and %v share the key %q, want apart", want.d, want.otherKey, r.Key(want.d))
			}
		}
	}
}

// TestReadmeExamples: every configuration of envoyproxy/ratelimit's
// README "Configuration" section parses, and gives the decisions the
// README describes for it. The YAML is the README's, as facts of the
// format (README.md at f2fb157).
// readme returns a README example's configuration, testdata/readme/name.yaml
// (the service's tests, internal/rls, read the same files).
func readme(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "readme", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadmeExamples(t *testing.T) {
	for _, tc := range []struct {
		source string
		yaml   []byte
		want   []decision
	}{
		{"envoyproxy/ratelimit README.md, Example 1", readme(t, "example-1"), []decision{
			{d: e("database=users"), rule: "mongo_cps.database_users", limit: "500/second", stats: "mongo_cps.database_users", otherKey: e("database=default")},
			{d: e("database=default"), rule: "mongo_cps.database_default", limit: "500/second"},
			{d: e("database=other")},
		}},
		{"envoyproxy/ratelimit README.md, Example 2", readme(t, "example-2"), []decision{
			// Each number gets its own 5 a day...
			{d: e("message_type=marketing", "to_number=2061111111"), rule: "messaging.message_type_marketing.to_number", limit: "5/day",
				stats: "messaging.message_type_marketing.to_number", otherKey: e("message_type=marketing", "to_number=2062222222")},
			// ... and its own 100 a day.
			{d: e("to_number=2061111111"), rule: "messaging.to_number", limit: "100/day", otherKey: e("to_number=2062222222")},
			// The placeholder has no limit of its own.
			{d: e("message_type=marketing")},
			{d: e("message_type=transactional", "to_number=2061111111")},
		}},
		{"envoyproxy/ratelimit README.md, Example 3", readme(t, "example-3"), []decision{
			{d: e("remote_address=50.0.0.1"), rule: "edge_proxy_per_ip.remote_address", limit: "10/second", otherKey: e("remote_address=50.0.0.2")},
			// The most specific match: key and value before key alone.
			{d: e("remote_address=50.0.0.5"), rule: "edge_proxy_per_ip.remote_address_50.0.0.5", limit: "0/second"},
		}},
		{"envoyproxy/ratelimit README.md, Example 4 (first configuration)", readme(t, "example-4-first-configuration"), []decision{
			{d: e("key=value", "subkey=subvalue")},
			{d: e("key=value"), rule: "example4.key_value", limit: "300/second"},
		}},
		{"envoyproxy/ratelimit README.md, Example 4 (second configuration)", readme(t, "example-4-second-configuration"), []decision{
			{d: e("key=value", "subkey=subvalue"), rule: "example4.key_value.subkey", limit: "300/second"},
			{d: e("key=value")},
		}},
		{"envoyproxy/ratelimit README.md, Example 5", readme(t, "example-5"), []decision{
			{d: e("ldap=x"), rule: "internal.ldap", limit: "unlimited"},
			{d: e("azure=x"), rule: "internal.azure", limit: "100/minute"},
			{d: e("gcp=x")},
		}},
		{"envoyproxy/ratelimit README.md, Example 6", readme(t, "example-6"), []decision{
			{d: e("service=auth-service", "user=user-a"), rule: "example6.service.user_user-a", limit: "10/second", shadow: true},
			{d: e("service=auth-service", "user=user-b"), rule: "example6.service.user_user-b", limit: "20/second"},
		}},
		{"envoyproxy/ratelimit README.md, Example 7", readme(t, "example-7"), []decision{
			{d: e("key_1=value_1", "user=bkthomps"), rule: "example7.key_1_value_1.user_bkthomps", limit: "5/second"},
			{d: e("key_2=value_2", "user=bkthomps"), rule: "example7.key_2_value_2.user_bkthomps", limit: "10/second", replaces: "specific_limit"},
			// Both: only the replacing 10/s applies.
			{d: e("key_1=value_1", "user=bkthomps"), replaced: [][]Entry{e("key_2=value_2", "user=bkthomps")},
				survivors: "example7.key_2_value_2.user_bkthomps"},
		}},
		{"envoyproxy/ratelimit README.md, Example 8", readme(t, "example-8"), []decision{
			{d: e("key1=unspecified_value"), rule: "example8.key1", limit: "10/minute", stats: "example8.key1_unspecified_value"},
			{d: e("key1=unspecified_value2"), rule: "example8.key1", limit: "10/minute", stats: "example8.key1_unspecified_value2"},
			{d: e("key1=value1"), rule: "example8.key1_value1", limit: "20/minute", stats: "example8.key1_value1"},
		}},
		{"envoyproxy/ratelimit README.md, Example 9 (trailing wildcard)", readme(t, "example-9-trailing-wildcard"), []decision{
			{d: e("key1=value1"), rule: "example9.key1_value*", limit: "20/minute", stats: "example9.key1_value*", otherKey: e("key1=value2")},
			{d: e("key1=valueXYZ"), rule: "example9.key1_value*", limit: "20/minute"},
			{d: e("key1=other")},
		}},
		{"envoyproxy/ratelimit README.md, Example 9 (middle wildcard)", readme(t, "example-9-middle-wildcard"), []decision{
			{d: e("path=/api/123/action"), rule: "example9.path_/api/*/action", limit: "20/minute"},
			{d: e("path=/api/user-id/action"), rule: "example9.path_/api/*/action", limit: "20/minute"},
			{d: e("path=/api/123/other")},
		}},
		{"envoyproxy/ratelimit README.md, Example 9 (multiple wildcards)", readme(t, "example-9-multiple-wildcards"), []decision{
			{d: e("route=/api/v1/resource/123/action"), rule: "example9.route_/api/*/resource/*/action", limit: "20/minute"},
			{d: e("route=/api/v2/resource/456/action"), rule: "example9.route_/api/*/resource/*/action", limit: "20/minute"},
			{d: e("route=/api/v2/resource/456")},
		}},
		{"envoyproxy/ratelimit README.md, Example 10", readme(t, "example-10"), []decision{
			{d: e("route=api", "http_method=GET", "subject_id=123"), rule: "example10.route.http_method.subject_id", limit: "60/minute",
				stats: "example10.route_api.http_method_GET.subject_id"},
			{d: e("route=web", "http_method=POST", "subject_id=456"), rule: "example10.route.http_method.subject_id", limit: "60/minute",
				stats: "example10.route_web.http_method_POST.subject_id"},
		}},
		{"envoyproxy/ratelimit README.md, Example 10 (with a wildcard)", readme(t, "example-10-with-a-wildcard"), []decision{
			{d: e("user=alice", "action=readfile", "resource=documents"), rule: "example10_wildcard.user.action_read*.resource", limit: "100/minute",
				stats: "example10_wildcard.user_alice.action_readfile.resource"},
			{d: e("user=alice", "action=write", "resource=documents")},
		}},
		{"envoyproxy/ratelimit README.md, Example 11", readme(t, "example-11"), []decision{
			{d: e("files=files/a.pdf"), rule: "example11.files_files/*", limit: "10/hour", sameKey: e("files=files/b.csv")},
			{d: e("files=files/c.txt"), rule: "example11.files_files/*", limit: "10/hour", sameKey: e("files=files/a.pdf")},
			{d: e("files_no_share=files_no_share/a.pdf"), rule: "example11.files_no_share_files_no_share/*", limit: "10/hour",
				otherKey: e("files_no_share=files_no_share/b.csv")},
		}},
		{"envoyproxy/ratelimit README.md, Example 11 (with value_to_metric)", readme(t, "example-11-with-value-to-metric"), []decision{
			// The README writes "example11_metrics.route_api.method_GET";
			// envoyproxy/ratelimit's code and tests give the pattern with
			// its '*', and method has no value_to_metric of its own.
			{d: e("route=api/v1", "method=GET"), rule: "example11_metrics.route_api/*.method", limit: "60/minute",
				stats: "example11_metrics.route_api/*.method", sameKey: e("route=api/v2", "method=GET"), otherKey: e("route=api/v1", "method=POST")},
		}},
		{"envoyproxy/ratelimit README.md, Descriptor list definition (with its placeholders filled in)", readme(t, "descriptor-list-definition"), []decision{
			{d: e("rule_key=rule_value"), rule: "some_domain.rule_key_rule_value", limit: "3/second", replaces: "other"},
			{d: e("rule_key=rule_value", "nested=x"), rule: "some_domain.rule_key_rule_value.nested", limit: "4/minute"},
		}},
	} {
		t.Run(tc.source, func(t *testing.T) {
			d, err := Parse("example.yaml", tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			checkDecisions(t, d, tc.want)
		})
	}
}
