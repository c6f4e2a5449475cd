#!/usr/bin/env python3
"""Overheads and ratios of one interleaved run (2026-11-25-issue19-run.sh).

Reads the benchmarks module's output files given as arguments (one
BenchmarkHTTP and BenchmarkGRPC pass per round, in order) and prints, per
file: each HTTP middleware's overhead over its baseline row (bare for
net/http middleware, echo-bare for Echo's) as the median of the per-round
differences, with the range; the ratio of each floodgate overhead to Echo's
limiter's, median of per-round ratios; and each gRPC row's ns/op as the
median, with its ratio to go-grpc-middleware's per-peer interceptor, median
of per-round ratios.
"""
import re
import statistics
import sys

BASE = {"echo-limiter": "echo-bare", "floodgate-echomw": "echo-bare", "floodgate-echomw-gcra": "echo-bare"}
line = re.compile(r"^Benchmark(HTTP|GRPC)/([^/\s]+)/(seq|par)-\d+\s+\d+\s+([\d.]+) ns/op.*?(\d+) B/op\s+(\d+) allocs/op")


def rounds(path):
    """Returns a list of rounds, each {(kind, name, mode): (ns, B, allocs)}."""
    out, cur = [], {}
    for text in open(path):
        m = line.match(text)
        if not m:
            continue
        kind, name, mode, ns, b, allocs = m.groups()
        key = (kind, name, mode)
        if key in cur:  # a new round starts
            out.append(cur)
            cur = {}
        cur[key] = (float(ns), int(b), int(allocs))
    if cur:
        out.append(cur)
    return out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(path):
    rs = rounds(path)
    print(f"== {path}: {len(rs)} rounds")
    names = []
    for r in rs:
        for k in r:
            if k[0] == "HTTP" and k[1] not in names:
                names.append(k[1])
    print("HTTP: overhead over the baseline row, ns (median of per-round differences) [range]; ×echo-limiter's (median of per-round ratios); B/op; allocs/op")
    for mode in ("seq", "par"):
        for n in names:
            base = BASE.get(n, "bare")
            if n in ("bare", "echo-bare"):
                ns = [r[("HTTP", n, mode)][0] for r in rs if ("HTTP", n, mode) in r]
                print(f"  {mode} {n:24s} {med(ns):8.1f} ns/op (baseline)")
                continue
            d, ratio = [], []
            last = None
            for r in rs:
                k, kb = ("HTTP", n, mode), ("HTTP", base, mode)
                ke, keb = ("HTTP", "echo-limiter", mode), ("HTTP", "echo-bare", mode)
                if k in r and kb in r:
                    d.append(r[k][0] - r[kb][0])
                    last = r[k]
                    if ke in r and keb in r:
                        ratio.append((r[k][0] - r[kb][0]) / (r[ke][0] - r[keb][0]))
            if d:
                print(f"  {mode} {n:24s} +{med(d):7.1f} [{min(d):.0f}..{max(d):.0f}]  ×{med(ratio):.2f} [{min(ratio):.2f}..{max(ratio):.2f}]  {last[1]} B {last[2]} allocs")
    print("gRPC: ns/op (median) [range]; ×ggm-perpeer (median of per-round ratios) [range]; B/op; allocs/op")
    gnames = []
    for r in rs:
        for k in r:
            if k[0] == "GRPC" and k[1] not in gnames:
                gnames.append(k[1])
    for mode in ("seq", "par"):
        for n in gnames:
            ns, ratio, last = [], [], None
            for r in rs:
                k, kg = ("GRPC", n, mode), ("GRPC", "ggm-perpeer", mode)
                if k in r:
                    ns.append(r[k][0])
                    last = r[k]
                    if kg in r:
                        ratio.append(r[k][0] / r[kg][0])
            if ns:
                print(f"  {mode} {n:18s} {med(ns):9.0f} [{min(ns):.0f}..{max(ns):.0f}]  ×{med(ratio):.3f} [{min(ratio):.2f}..{max(ratio):.2f}]  {last[1]} B {last[2]} allocs")


for p in sys.argv[1:]:
    report(p)
