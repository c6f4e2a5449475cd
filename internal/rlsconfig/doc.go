// Package rlsconfig reads envoyproxy/ratelimit's configuration format and
// compiles it to floodgate's limits, for the service that answers Envoy's
// envoy.service.ratelimit.v3.RateLimitService.
//
// A file is one domain and its descriptors, as envoyproxy/ratelimit's
// README describes it:
//
//	domain: messaging
//	descriptors:
//	  - key: message_type
//	    value: marketing
//	    descriptors:
//	      - key: to_number
//	        rate_limit:
//	          unit: day
//	          requests_per_unit: 5
//
// Every field of that format is read with its meaning there: key, value
// (with '*' wildcards), rate_limit's unit (second, minute, hour, day, week,
// month = 30 days, year = 365 days, in any case), requests_per_unit (0
// refuses every request), unlimited, name and replaces, and the
// descriptor's shadow_mode, quota_mode, detailed_metric, value_to_metric,
// share_threshold and metadata, which [Rule] carries for the service.
// [Config.Match] picks a request descriptor's rule as envoyproxy/ratelimit
// does, [Rule.Key] names the state it counts in and [Rule.StatsKey] the
// metrics it reports under.
//
// floodgate adds optional fields to rate_limit: algorithm (a name
// [core.ParseAlgorithm] reads, but leaky-bucket and concurrency, which a
// service that answers at once cannot use; by default fixed-window, the
// windows of envoyproxy/ratelimit, aligned to multiples of the unit since
// the Unix epoch), burst (for token-bucket and gcra; 0, as when it is left
// out, is requests_per_unit, as core.ParseLimit's burst=0 is events), and
// limits, a list of further limits ({unit, requests_per_unit, burst,
// algorithm}, the algorithm by default rate_limit's) that apply together
// with the first, all or nothing, and local_quota (true: the service
// decides the rule's hot descriptors in memory from leases; fixed-window,
// token-bucket and gcra only):
//
//	rate_limit:
//	  unit: second
//	  requests_per_unit: 10
//	  algorithm: gcra
//	  burst: 20
//	  limits:
//	    - unit: hour
//	      requests_per_unit: 5000
//
// Where this package differs from envoyproxy/ratelimit:
//
//   - A key in the wrong place (shadow_mode inside rate_limit, say), a key
//     given twice in one mapping and a file with two YAML documents are
//     errors; envoyproxy/ratelimit ignores the key, keeps the last value
//     and reads the first document.
//   - Matching compares keys and values apart: envoyproxy/ratelimit joins
//     them as key_value, so there the entry (a, b_c) can match a
//     descriptor with key a_b and wildcard value c*, and a '*' in a key
//     acts as a wildcard. Here keys match exactly.
//   - [Load] reads only *.yaml and *.yml files directly in the directory,
//     skipping hidden names unless [ReadDotFiles] is given, and reporting
//     files that are not regular files (a named pipe, say) rather than
//     reading them; envoyproxy/ratelimit reads every file of the tree. A
//     file that is invalid is left out and the rest loads, where
//     envoyproxy/ratelimit keeps its whole previous configuration; every
//     error of the file is reported (up to 100), each at its file and
//     line. [CheckRules] leaves out, the same way, a file with a rule the
//     caller cannot enforce (the service's store refuses its limits).
//   - [Watch] watches the directory; with [WatchRoot], a directory above
//     it too, so that swapping a link on the way (envoyproxy/ratelimit's
//     RUNTIME_WATCH_ROOT) reloads. envoyproxy/ratelimit then reloads on
//     that swap alone; here a file's change still reloads as well.
//   - A domain, descriptor key or value longer than [MaxKeyPart] bytes is
//     held in [Rule.Key] as its SHA-256 digest (128 bits), so that no
//     client's long text is kept for a rule's period.
//   - Statistics keys follow envoyproxy/ratelimit's code, which for a
//     wildcard with share_threshold writes the pattern with its '*'
//     ("route_api/*"), where its README says "route_api".
package rlsconfig
