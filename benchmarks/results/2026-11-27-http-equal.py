#!/usr/bin/env python3
"""BenchmarkHTTP on equal terms (docs/performance.md), from one run.

Reads the output of interleaved rounds of `-test.bench '^BenchmarkHTTP$'
-test.count=1` (one round after the other in one file) and prints, for seq
and par, each middleware's overhead over its baseline row (bare for net/http
middleware, echo-bare for those in Echo's router) as the median of the
per-round differences [range], in two groups:

- no field on an admitted request: floodgate's quiet mode (HeadersNone)
  beside Echo's limiter, with the ratio to Echo's limiter's overhead;
- fields: floodgate's default five (and the legacy style's three) beside the
  peers that send fields, with the ratio to httprate's overhead and to that
  of the fastest such peer (lowest median overhead).

Ratios are the median of per-round ratios [range].
"""
import re
import statistics
import sys

ECHO = {"echo-limiter", "floodgate-echomw", "floodgate-echomw-gcra", "floodgate-echomw-quiet", "floodgate-echomw-gcra-quiet"}
QUIET = ["echo-limiter", "floodgate-echomw-quiet", "floodgate-echomw-gcra-quiet", "floodgate-quiet", "floodgate-gcra-quiet"]
PEERS = ["sethvargo", "httprate", "ulule", "throttled"]
FIELDS = ["floodgate", "floodgate-gcra", "floodgate-legacy", "floodgate-echomw", "floodgate-echomw-gcra"] + PEERS + ["tollbooth"]
line = re.compile(r"^BenchmarkHTTP/([^/\s]+)/(seq|par)-\d+\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op")


def rounds(path):
    out, cur = [], {}
    for text in open(path):
        m = line.match(text)
        if not m:
            continue
        name, mode, ns, b, allocs = m.groups()
        if (name, mode) in cur:
            out.append(cur)
            cur = {}
        cur[(name, mode)] = (float(ns), int(b), int(allocs))
    if cur:
        out.append(cur)
    return out


def overheads(rs, name, mode):
    base = "echo-bare" if name in ECHO else "bare"
    return [r[(name, mode)][0] - r[(base, mode)][0] for r in rs if (name, mode) in r and (base, mode) in r]


def ratios(rs, name, ref, mode):
    a, b = overheads(rs, name, mode), overheads(rs, ref, mode)
    return [x / y for x, y in zip(a, b)]


def fmt(xs, f="{:.0f}"):
    return (f + " [" + f + "–" + f + "]").format(statistics.median(xs), min(xs), max(xs))


def main(path):
    rs = rounds(path)
    print(f"{path}: {len(rs)} rounds")
    for mode in ("seq", "par"):
        base = {n: statistics.median([r[(n, mode)][0] for r in rs]) for n in ("bare", "echo-bare")}
        print(f"\n{mode}: bare {base['bare']:.1f} ns/op, echo-bare {base['echo-bare']:.1f} ns/op")
        print("  no fields: overhead ns (median [range]), ×echo-limiter, B/op, allocs/op")
        for n in QUIET:
            last = rs[-1][(n, mode)]
            print(f"    {n:28s} +{fmt(overheads(rs, n, mode)):22s} ×{fmt(ratios(rs, n, 'echo-limiter', mode), '{:.2f}'):20s} {last[1]} B {last[2]} allocs")
        fastest = min(PEERS, key=lambda n: statistics.median(overheads(rs, n, mode)))
        print(f"  fields: overhead ns (median [range]), ×httprate, ×{fastest} (the fastest peer with fields), B/op, allocs/op")
        for n in FIELDS:
            last = rs[-1][(n, mode)]
            print(f"    {n:28s} +{fmt(overheads(rs, n, mode)):22s} ×{fmt(ratios(rs, n, 'httprate', mode), '{:.2f}'):20s} ×{fmt(ratios(rs, n, fastest, mode), '{:.2f}'):20s} {last[1]} B {last[2]} allocs")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
