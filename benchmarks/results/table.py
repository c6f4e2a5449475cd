"""Prints README.md's tables from benchmark output files.

    python3 results/table.py FILE...

Each row is a median over rounds. "×floor" is the median of the per-round
ratios to the floor, and HTTP overhead the median of per-round differences
to the bare handler (rounds pair up by order within a file). A benchmark
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
