"""Side-by-side measurement helpers for Weft's Python benchmarks (see BENCHMARKING.md):
alternate Weft and its reference (A B A B) after a warm-up, take per-pair ratios, report the
median with min and max as one JSON object per line and a human table."""

import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def default_weft():
    for preset in ("release", "ci", "dev", "cli"):
        path = os.path.join(ROOT, "build", preset, "src", "cli", "weft")
        if os.access(path, os.X_OK):
            return path
    return os.path.join(ROOT, "build", "release", "src", "cli", "weft")


def run_pairs(weft, reference, pairs, warmup=1):
    """weft() and reference() each return a rate (higher is better). Returns the rates and the
    per-pair ratios weft/reference."""
    for _ in range(warmup):
        weft()
        reference()
    a, b = [], []
    for _ in range(pairs):
        a.append(weft())
        b.append(reference())
    ratios = [x / y if y else 0.0 for x, y in zip(a, b)]
    return a, b, ratios


def result(bench, unit, reference_name, a, b, ratios, **extra):
    return {"bench": bench, "unit": unit, "weft": round(statistics.median(a), 4),
            "reference": round(statistics.median(b), 4), "reference_name": reference_name,
            "ratio": round(statistics.median(ratios), 4), "ratio_min": round(min(ratios), 4),
            "ratio_max": round(max(ratios), 4), "pairs": len(ratios), **extra}


def emit(obj):
    print(json.dumps(obj), flush=True)


def table(rows, columns):
    widths = [max(len(str(c)), *(len(fmt(r.get(c))) for r in rows)) for c in columns]
    print()
    print("  ".join(str(c).ljust(w) for c, w in zip(columns, widths)))
    for r in rows:
        print("  ".join(fmt(r.get(c)).ljust(w) for c, w in zip(columns, widths)))


def fmt(v):
    if isinstance(v, float):
        return f"{v:.3f}"
    return "" if v is None else str(v)
