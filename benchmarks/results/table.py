"""Prints README.md's tables from benchmark output files.

    python3 results/table.py FILE...

Each row is a median over rounds. "×floor" is the median of the per-round
ratios to the floor, "×PING" (BenchmarkRedis) the median of the per-round
ratios to PING in the same mode, and HTTP overhead the median of per-round
differences to the bare handler (rounds pair up by order within a file). A benchmark
name found in a later file replaces that name's rows from earlier files.
Failed benchmarks (lines without ns/op) are skipped.
"""
import re, sys, statistics as st
from collections import defaultdict

rows = defaultdict(lambda: defaultdict(list))  # name -> unit -> [values per round]
for path in sys.argv[1:]:
    here = defaultdict(lambda: defaultdict(list))
    for line in open(path):
        if not line.startswith('Benchmark') or 'FAIL' in line or 'ns/op' not in line: continue
        f = line.split()
        name = re.sub(r'-\d+$', '', f[0])
        for i in range(2, len(f)-1, 2):
            here[name][f[i+1]].append(float(f[i]))
    rows.update(here)
med = lambda xs: st.median(xs)

def redis_table():
    """BenchmarkRedis: µs/op, the median of per-round ratios to PING, and
    what the server saw (round trips, commands, server µs in PING/scripts)."""
    names = []
    for k in rows:
        if k.startswith("BenchmarkRedis/"):
            n = k.split("/")[1]
            if n not in names: names.append(n)
    print("| row | seq µs/op | ×PING | par64 µs/op | ×PING | pipe64 µs/op | round trips/op | commands/op | server µs/op | B/op | allocs/op (seq/par64) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cell = lambda n, m, u: rows.get(f"BenchmarkRedis/{n}/{m}", {}).get(u, [])
    for n in names:
        out = [n]
        for m in ["seq", "par64"]:
            v, p = cell(n, m, "ns/op"), cell("ping", m, "ns/op")
            if not v: out += ["–", "–"]; continue
            us = med(v) / 1000
            out.append(f"{us:.3f}" if us < 1 else f"{us:.1f}")
            out.append(f"{med([a/b for a, b in zip(v, p)]):.2f}×" if p else "–")
        v = cell(n, "pipe64", "ns/op")
        out.append(f"{med(v)/1000:.2f}" if v else "–")
        mode = next(m for m in ["seq", "par64", "pipe64"] if cell(n, m, "ns/op"))
        out.append(f'{med(cell(n, mode, "rt/op")):.3g}')
        out.append(f'{med(cell(n, mode, "cmds/op")):.3g}')
        out.append(f'{med(cell(n, mode, "srv-µs/op")):.2g}')
        out.append(f'{med(cell(n, mode, "B/op")):.0f}')
        out.append("/".join(f'{med(cell(n, m, "allocs/op")):.0f}' if cell(n, m, "allocs/op") else "–" for m in ["seq", "par64"]))
        print("| " + " | ".join(out) + " |")
    print("n per row:", {k: len(v["ns/op"]) for k, v in rows.items() if k.startswith("BenchmarkRedis/ping/")})
    print("(round trips, commands, server µs and B/op from seq, else the row's only mode)")

if any(k.startswith("BenchmarkRedis/") for k in rows):
    redis_table()
if not any(k.startswith("BenchmarkDecision/") for k in rows):
    sys.exit()
impls = ["floor","floodgate","floodgate-gcra","xrate-map","xrate-lru","sethvargo","httprate","ulule","throttled","tollbooth"]
peers = impls[3:]
wl = ["hot_seq","hot_par","zipf_par","churn_par"]
print("| impl | " + " | ".join(wl) + " | B/key at 10⁶ | allocs/op (hot_seq/hot_par/zipf/churn) |")
print("|---|" + "---|"*(len(wl)+2))
for im in impls:
    cells=[]
    for w in wl:
        v = rows[f"BenchmarkDecision/{im}/{w}"]["ns/op"]
        fl = rows[f"BenchmarkDecision/floor/{w}"]["ns/op"]
        ratio = med([a/b for a,b in zip(v,fl)])
        cells.append(f"{med(v):.0f} ({ratio:.2f}×)" if im!="floor" else f"{med(v):.1f}")
    bk = rows[f"BenchmarkMemory/{im}"]["B/key"]
    al = "/".join(f'{med(rows[f"BenchmarkDecision/{im}/{w}"]["allocs/op"]):.0f}' for w in wl)
    errs = [max(rows[f"BenchmarkDecision/{im}/{w}"].get("errors/op",[0])) for w in wl]
    print(f"| {im} | " + " | ".join(cells) + f" | {med(bk):.0f} | {al} |" + (f" errors/op max {errs}" if any(errs) else ""))
print()
print("n per row:", {k: len(v["ns/op"]) for k,v in rows.items() if "floor" in k})
mws = ["bare","floodgate","floodgate-gcra","sethvargo","httprate","ulule","throttled","tollbooth"]
ov = {}
for m in mws[1:]:
    for mode in ["seq","par"]:
        v = rows[f"BenchmarkHTTP/{m}/{mode}"]["ns/op"]; b = rows[f"BenchmarkHTTP/bare/{mode}"]["ns/op"]
        ov[(m,mode)] = med([a-c for a,c in zip(v,b)])
fast = {mode: min(ov[(m,mode)] for m in mws[3:]) for mode in ["seq","par"]}
fastn = {mode: min(mws[3:], key=lambda m: ov[(m,mode)]) for mode in ["seq","par"]}
print("| middleware | seq ns/op | overhead seq | ×fastest peer | par ns/op | overhead par | ×fastest peer | B/op | allocs/op |")
print("|---|---|---|---|---|---|---|---|---|")
for m in mws:
    r = rows[f"BenchmarkHTTP/{m}/seq"]; p = rows[f"BenchmarkHTTP/{m}/par"]
    if m=="bare":
        print(f"| bare handler | {med(r['ns/op']):.1f} | – | – | {med(p['ns/op']):.1f} | – | – | {med(r['B/op']):.0f} | {med(r['allocs/op']):.0f} |"); continue
    print(f"| {m} | {med(r['ns/op']):.0f} | +{ov[(m,'seq')]:.0f} | {ov[(m,'seq')]/fast['seq']:.2f}× | {med(p['ns/op']):.0f} | +{ov[(m,'par')]:.0f} | {ov[(m,'par')]/fast['par']:.2f}× | {med(r['B/op']):.0f} | {med(r['allocs/op']):.0f} |")
print("fastest peer:", fastn)
