#!/usr/bin/env python3
"""Summarizes BenchmarkEnvoyRLS output (2026-11-26-envoy-rls-run.sh).

Per row (health, d1, d3 at c1, c16, c64): each service's median over the
rounds of decisions/s, p50 and p99 (µs), CPU µs per request of the service
(cpu-µs/op, from /proc) and of redis-server (redis-cpu-µs/op, INFO cpu),
and Redis commands per request; floodgate/envoyproxy as the median of the
per-round ratios [their range] (the two services' rows of one round ran
back to back). Then the noise, each row's spread over the rounds,
(max - min) / median; the CPU per request with its range, the load
generator's (client-cpu-µs/op, this process's) and the machine's idle share
during the loop (idle-%) where the run reports them; and, for the c64 rows,
the 2× budget: the service and Redis CPU per request floodgate could spend
and still answer twice envoyproxy's requests a second on the same machine,
(client + service + redis of envoyproxy) / 2 - client of floodgate, per
round, against what floodgate spent and its health row's service CPU (the
cost of answering a gRPC call at all).

    python3 results/2026-11-26-envoy-rls-summary.py raw.txt
"""
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^BenchmarkEnvoyRLS/(\w+)/(\w+)/(c\d+)(?:-\d+)?\s+\d+\s+(.*)$")
IMPLS = ("floodgate", "envoyproxy")


def parse(path):
    rows = defaultdict(lambda: defaultdict(list))  # (row, c) -> impl -> [metrics]
    order = []
    notes = []
    for line in open(path):
        if line.startswith("# "):
            notes.append(line[2:].rstrip())
        m = LINE.match(line.strip())
        if not m:
            continue
        impl, row, c, rest = m.groups()
        f = rest.split()
        metrics = {f[i + 1]: float(f[i]) for i in range(0, len(f) - 1, 2)}
        key = (row, c)
        if key not in order:
            order.append(key)
        rows[key][impl].append(metrics)
    return rows, order, notes


def med(runs, unit):
    return statistics.median(r[unit] for r in runs)


def ratios(rows, unit):
    f, e = rows["floodgate"], rows["envoyproxy"]
    return [a[unit] / b[unit] for a, b in zip(f, e) if b[unit]]


def fmt(x):
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.0f}"
    return f"{x:.2f}"


def main(path):
    rows, order, notes = parse(path)
    for n in notes:
        print("#", n)
    print()
    print("rounds per row:", ", ".join(sorted({str(len(rows[k][i])) for k in order for i in IMPLS})))
    print()
    head = ("row", "floodgate dec/s", "envoyproxy dec/s", "ratio dec/s [range]",
            "floodgate p99", "envoyproxy p99", "ratio p99 [range]",
            "p50 f / e", "cpu-µs/op f / e", "redis-cpu-µs/op f / e", "redis-cmds/op f / e")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in order:
        r = rows[key]
        if not all(r[i] for i in IMPLS):
            continue
        name = "/".join(key)
        cells = [name]
        for unit in ("decisions/s",):
            cells += [fmt(med(r["floodgate"], unit)), fmt(med(r["envoyproxy"], unit))]
            q = ratios(r, unit)
            cells.append(f"{statistics.median(q):.2f}× [{min(q):.2f}–{max(q):.2f}]")
        unit = "p99-µs"
        cells += [fmt(med(r["floodgate"], unit)), fmt(med(r["envoyproxy"], unit))]
        q = ratios(r, unit)
        cells.append(f"{statistics.median(q):.2f}× [{min(q):.2f}–{max(q):.2f}]")
        for unit in ("p50-µs", "cpu-µs/op", "redis-cpu-µs/op", "redis-cmds/op"):
            if all(unit in m for i in IMPLS for m in r[i]):
                cells.append(f"{fmt(med(r['floodgate'], unit))} / {fmt(med(r['envoyproxy'], unit))}")
            else:
                cells.append("–")
        print("| " + " | ".join(cells) + " |")
    print()
    print("noise: (max - min) / median of decisions/s over the rounds, and of p99")
    print("| row | floodgate dec/s | envoyproxy dec/s | floodgate p99 | envoyproxy p99 |")
    print("|---|---|---|---|---|")
    for key in order:
        r = rows[key]
        cells = ["/".join(key)]
        for unit in ("decisions/s", "p99-µs"):
            for i in IMPLS:
                v = [m[unit] for m in r[i]]
                cells.append(f"{(max(v) - min(v)) / statistics.median(v) * 100:.0f} %" if v else "–")
        cells = [cells[0], cells[1], cells[2], cells[3], cells[4]]
        print("| " + " | ".join(cells) + " |")

    print()
    print("CPU per request, µs: median [range] over the rounds; total = service + redis-server")
    print("| row | floodgate service | envoyproxy service | floodgate redis | envoyproxy redis | total f / e"
          " | client f | client e | idle % f | idle % e |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in order:
        r = rows[key]
        cells = ["/".join(key)]
        for unit in ("cpu-µs/op", "redis-cpu-µs/op"):
            for i in IMPLS:
                v = [m[unit] for m in r[i] if unit in m]
                cells.append(f"{statistics.median(v):.0f} [{min(v):.0f}–{max(v):.0f}]" if v else "–")
        tot = []
        for i in IMPLS:
            v = [m["cpu-µs/op"] + m["redis-cpu-µs/op"] for m in r[i] if "cpu-µs/op" in m and "redis-cpu-µs/op" in m]
            tot.append(f"{statistics.median(v):.0f}" if v else "–")
        cells.append(" / ".join(tot))
        for unit in ("client-cpu-µs/op", "idle-%"):
            for i in IMPLS:
                v = [m[unit] for m in r[i] if unit in m]
                cells.append(f"{statistics.median(v):.0f}" if v else "–")
        print("| " + " | ".join(cells) + " |")

    print()
    print("2x budget at c64, µs per request: what floodgate's service and Redis may spend to answer")
    print("twice envoyproxy's requests a second, (client + service + redis of envoyproxy) / 2 - client")
    print("of floodgate, median [range] over the rounds; what they spent; the health row's service CPU")
    print("| row | budget | floodgate service + redis | floodgate health service |")
    print("|---|---|---|---|")
    health = rows.get(("health", "c64"), {}).get("floodgate", [])
    hv = [m["cpu-µs/op"] for m in health if "cpu-µs/op" in m]
    for key in order:
        if key[1] != "c64" or key[0] == "health":
            continue
        r = rows[key]
        need = ("client-cpu-µs/op", "cpu-µs/op", "redis-cpu-µs/op")
        b = [(e["client-cpu-µs/op"] + e["cpu-µs/op"] + e["redis-cpu-µs/op"]) / 2 - f["client-cpu-µs/op"]
             for f, e in zip(r["floodgate"], r["envoyproxy"]) if all(u in f and u in e for u in need)]
        if not b:
            continue
        spent = [f["cpu-µs/op"] + f["redis-cpu-µs/op"] for f in r["floodgate"]]
        cells = ["/".join(key), f"{statistics.median(b):.0f} [{min(b):.0f}–{max(b):.0f}]",
                 f"{statistics.median(spent):.0f} [{min(spent):.0f}–{max(spent):.0f}]",
                 f"{statistics.median(hv):.0f} [{min(hv):.0f}–{max(hv):.0f}]" if hv else "–"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
