#!/usr/bin/env python3
"""Dedup benchmark: for each generated dataset kind, store v1, then a v2 with 10 % of its
files changed, and report the bytes Weft stored for v2 (growth of stored chunk bytes) as a
fraction of v2's size, next to what would move without dedup: `tar | zstd -3` of v2.
Goals (DESIGN.md): v2 stores <= 15 % more; v2 moves >= 30 % fewer bytes than tar | zstd.

Byte counts are deterministic (fixed seeds), so each kind runs once; nothing is timed.

  /usr/bin/python3 bench/dedup.py [--size 128M] [--kinds images,shards,jsonl,tensors] [--full]
"""

import argparse
import json
import os
import shutil
import subprocess

import benchlib
import gen_dataset


def weft_du(weft, data):
    out = subprocess.run([weft, "--data", data, "--json", "du"], check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)


def tar_zstd_bytes(root):
    tar = subprocess.Popen(["tar", "-C", root, "-cf", "-", "."], stdout=subprocess.PIPE)
    zstd = subprocess.run(["zstd", "-3", "-T1", "-c"], stdin=tar.stdout, stdout=subprocess.PIPE,
                          check=True)
    tar.stdout.close()
    if tar.wait() != 0:
        raise RuntimeError("tar failed")
    return len(zstd.stdout)


def tree_bytes(root):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(root) for n in ns)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=gen_dataset.parse_size, default=gen_dataset.parse_size("128M"),
                   help="v1 size per kind (default 128M; --full: 1G)")
    p.add_argument("--kinds", default="images,shards,jsonl,tensors")
    p.add_argument("--change-fraction", type=float, default=0.1)
    p.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "dedup"))
    p.add_argument("--weft", default=benchlib.default_weft())
    p.add_argument("--full", action="store_true")
    args = p.parse_args()
    if args.full:
        args.size = 1 << 30
    if not os.access(args.weft, os.X_OK):
        p.error(f"no weft binary at {args.weft}: build the release preset first")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    rows = []
    try:
        for kind in args.kinds.split(","):
            v1, v2 = os.path.join(args.dir, f"{kind}-v1"), os.path.join(args.dir, f"{kind}-v2")
            data = os.path.join(args.dir, f"{kind}-data")
            gen_dataset.main(["--kind", kind, "--size", str(args.size), "--seed", "1", "--out",
                              v1, "--quiet"])
            changes = gen_dataset.mutate(v1, v2, args.change_fraction, 2)
            subprocess.run([args.weft, "--data", data, "-q", "put", v1, "/ds"], check=True)
            du1 = weft_du(args.weft, data)
            subprocess.run([args.weft, "--data", data, "-q", "put", v2 + "/.", "/ds"], check=True)
            du2 = weft_du(args.weft, data)
            v2_bytes = tree_bytes(v2)
            weft_v2 = du2["stored_bytes"] - du1["stored_bytes"]
            reference = tar_zstd_bytes(v2)
            row = {"bench": f"dedup {kind}", "unit": "bytes", "weft": weft_v2,
                   "reference": reference, "reference_name": "tar | zstd -3 of v2",
                   "ratio": round(weft_v2 / reference, 4) if reference else None,
                   "v1_bytes": tree_bytes(v1), "v1_stored": du1["stored_bytes"],
                   "v2_bytes": v2_bytes, "v1_files": changes["files"],
                   "files_changed": {k: v for k, v in changes.items() if k != "files"},
                   "v2_stored_fraction": round(weft_v2 / v2_bytes, 4),
                   "stored_growth": round(du2["stored_bytes"] / du1["stored_bytes"] - 1, 4),
                   "v1_compression": round(du1["compression_ratio"], 4),
                   "dedup_ratio_after_v2": round(du2["dedup_ratio"], 4)}
            benchlib.emit(row)
            rows.append(row)
            for d in (v1, v2, data):
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    benchlib.table(rows, ["bench", "v2_bytes", "weft", "reference", "ratio",
                          "v2_stored_fraction", "stored_growth", "v1_compression"])
    print("(weft = stored-bytes growth from v1 to v2; reference = bytes of tar | zstd -3 of v2;"
          " ratio = weft / reference, lower is better)")


if __name__ == "__main__":
    main()
