#!/usr/bin/env python3
"""Per-run differences of BenchmarkRedisPaired's medians against redis_rate.

Usage: 2026-11-26-coldpath-paired.py FILE. Each run's rows were timed call
by call in turns, so a run's differences are paired: the machine's state is
the same for all rows of one run."""
import statistics, sys

runs = []
for line in open(sys.argv[1]):
    if line.startswith('BenchmarkRedisPaired'):
        f = line.split()
        runs.append({f[i + 1]: float(f[i]) for i in range(4, len(f) - 1, 2)})
rows = [k[:-3] for k in runs[0] if k.endswith('-µs')]
print(f"{len(runs)} runs; ping median per run: " + " ".join(f"{r['ping-µs']:.1f}" for r in runs))
for row in rows:
    d = [r[row + '-µs'] - r['redis_rate-µs'] for r in runs]
    x = [r[row + '-µs'] / r['ping-µs'] for r in runs]
    print(f"{row:26s} xping median {statistics.median(x):.3f}  minus redis_rate µs: median {statistics.median(d):+6.2f}  "
          f"[{min(d):+.1f} .. {max(d):+.1f}]  below in {sum(v < 0 for v in d)}/{len(d)}")
