// Package rules enforces rate limits written in a YAML file, and changes
// them while the server runs when the file changes.
//
//	set, err := rules.Watch("rules.yaml",
//		rules.WithKey("ip", keyfunc.MustClientIP(keyfunc.WithTrustedProxies("10.0.0.0/8"))),
//		rules.WithHTTPOptions(httpmw.WithObserver(metrics)))
//	if err != nil {
//		log.Fatal(err) // rules.yaml:7: rules[1].limit: core: ...
//	}
//	defer set.Close()
//	http.ListenAndServe(addr, set.Middleware(mux))
//
// # The file
//
// A rules file holds one YAML document with one field, rules, a list of
// rules. Each rule is a mapping with these fields (others are errors):
//
//	rules:
//	  - name: login                      # required, unique: 1 to 64 letters, digits, . _ - :
//	    match:                           # required: paths, grpc or both
//	      paths: ["/login", "/api/*"]    # exact paths, or prefixes ending in /*
//	      methods: [POST]                # HTTP methods (upper case); default any
//	      grpc: ["/pkg.Auth/Login", "/pkg.Admin/*", "*"]  # full methods, services, all
//	    limit: "5/min burst=5"           # one limit, in core.ParseLimit's syntax
//	    limits: ["10/s", "10000/h"]      # or several, all or nothing (core.NewStack)
//	    algorithm: gcra                  # default token-bucket
//	    warm-up: 30s                     # warm-up only, required there
//	    cold-factor: 3                   # warm-up only, default 3
//	    max-delay: 500ms                 # leaky-bucket only, default 1s
//	    key: ip+header:X-Api-Key         # default ip
//	    cost: 2                          # or {content-length: 1KiB, unknown: refuse}
//	    shadow: true                     # measure, never enforce (the middleware's WithShadow)
//	    shadow-headers: true             # shadow rules send their rate-limit fields
//
// paths, methods, grpc and limits take a list or a single value. A path
// "/api/*" matches every path that starts with "/api/" (not "/api"
// itself); "/*" matches every path. A grpc pattern "/pkg.Service/*"
// matches every method of the service; "*" every method. methods restrict
// paths and need them.
//
// algorithm is one of core's algorithms by the name its String method
// gives: token-bucket, gcra, fixed-window, sliding-window, sliding-log,
// leaky-bucket, warm-up, concurrency. It applies to every limit of the
// rule, with warm-up, cold-factor and max-delay. A limit is a policy in
// core.ParseLimit's syntax and may name its own algorithm and settings
// instead ("10/s algorithm=gcra", "1000/h algorithm=fixed-window",
// "5/s max-delay=2s"), so that the layers of one rule run different
// algorithms; a rule gives the algorithm in one place or the other, not
// both. Rule.Limits are the compiled policies.
//
// A limit without name= is named after its rule ("login"), and each of
// several limits after the rule and its period ("api-1s", "api-1h"; with
// two limits of one period, their rates: "api-10-per-1s"), since the name
// is what clients see in RateLimit-Policy. The name depends on nothing
// else, so it stays the same when a reload changes the limit's rate.
//
// key says what the rule counts by: parts joined by "+" into one key
// (keyfunc.Join):
//
//   - ip: the client's address (the socket peer, or what [WithKey] gives
//     for "ip", such as a keyfunc.ClientIP that trusts your proxies; over
//     gRPC the peer, grpcmw.KeyByPeerIP);
//   - header:NAME: the header's value (over gRPC, the metadata of the same
//     name in lower case); a request without it is answered 400 (a bad key);
//   - path: the URL path (HTTP only);
//   - method: the HTTP method, or the gRPC full method;
//   - global: one key for every request the rule matches (alone only);
//   - a name registered with [WithKey] (HTTP) or grpcrules.WithKey (gRPC).
//
// cost is what a request spends: a whole number, or {content-length: SIZE}
// to price an HTTP request by its declared body (httpmw.CostByContentLength)
// in units of SIZE bytes (512, 1KiB, 4MB; units B, KB, KiB, MB, MiB, GB,
// GiB), with unknown: the units a body of undeclared length costs, or
// refuse (the default) to refuse it as an invalid cost.
//
// # Errors
//
// [Open], [New], [Watch] and every reload check everything at load and
// fail on the first problem with a *[Error] that names the file, the line
// and the field, as compilers do:
//
//	rules.yaml:7: rules[1].limit: core: limit "5/fortnight": period "fortnight" is not a unit (s, min, h, d) or a positive duration like 10s
//
// Unknown and repeated fields, a rule without a name, a match or a limit,
// limit and limits together, duplicate rule names, unknown algorithms,
// options that do not belong to the rule's algorithm, malformed paths,
// methods, gRPC patterns, keys and costs are all errors; so is anything
// core refuses when the rule's limiter is made (reported at the rule's
// line).
//
// # Matching
//
// A request is checked by the first rule, in file order, that matches it:
// over HTTP its path and method ([Set.Middleware]), over gRPC its full
// method (package grpcrules). Put specific rules before general ones. A
// request no rule matches goes on untouched, without rate-limit headers.
// Each rule has its own limiter, so two rules never share a count even
// when their keys are alike.
//
// # Reloading
//
// [Watch] reloads the file when it changes (watching its directory with
// fsnotify, debounced); [Set.Reload] reloads it on demand (on SIGHUP, say:
// see [Watch]) and [Set.Apply] applies rules from memory. A valid file takes effect
// atomically: each request reads the rules in force once, when it starts,
// and finishes under them. A rule whose policy is unchanged — the same
// name, limits (events, period, burst, name), algorithm and its options,
// and key — keeps its limiter, so its keys keep their counts, wherever the
// rule moved in the file and whatever its match, cost or shadow setting
// became (turning shadow mode off enforces the counts measured in it).
// Any other rule gets a fresh limiter. An invalid file changes nothing:
// the rules in force stay, and the error is returned and logged to
// slog.Default(), or handed to [WithOnReload]'s function instead.
// Successful reloads are logged too, with how many rules kept their state.
//
// A file may hold up to 1000 rules in 1 MiB. To check a file before it is
// deployed (in CI, say), make a Set of it with [New] and the options the
// server uses.
//
// The package imports neither gRPC nor any web framework: gRPC
// interceptors driven by the same Set live in package rules/grpcrules,
// which adds its state to every Table through [Set.Attach].
package rules
