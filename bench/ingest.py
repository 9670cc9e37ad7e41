#!/usr/bin/env python3
"""Ingest benchmark: `weft put` of incompressible data vs `cp -r` of the same bytes to the
same disk followed by an fsync of every copied file (goal: weft >= 0.8x cp's throughput).

Two shapes: a few large files, and image-like files (log-normal, mean ~115 KB) where each
file is its own durable commit. Each pair starts from an empty destination (a fresh data
directory for weft, so nothing dedups against an earlier run); the source is read once before
timing so both sides read it from the page cache.

  /usr/bin/python3 bench/ingest.py [--size 256M] [--pairs 5] [--dir bench/out/ingest] [--full]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time

import benchlib
import gen_dataset

MIB = 1 << 20


def fsync_tree(root):
    for dirpath, _, names in os.walk(root):
        for name in names:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def tree_bytes(root):
    return sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(root) for n in ns)


def warm(root):
    for dirpath, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(8 * MIB):
                    pass


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=gen_dataset.parse_size, default=gen_dataset.parse_size("256M"),
                   help="bytes per shape (default 256M; --full: 2G)")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "ingest"),
                   help="work directory, on the disk to measure")
    p.add_argument("--weft", default=benchlib.default_weft())
    p.add_argument("--full", action="store_true")
    args = p.parse_args()
    if args.full:
        args.size = 2 << 30
    if not os.access(args.weft, os.X_OK):
        p.error(f"no weft binary at {args.weft}: build the release preset first")

    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    rows = []
    try:
        for shape in ("large-files", "image-files"):
            src = os.path.join(args.dir, f"src-{shape}")
            if shape == "large-files":
                os.makedirs(src)
                gen = gen_dataset.Bytes(f"ingest/{shape}")
                n = max(args.size // (64 * MIB), 1)
                for i in range(n):
                    with open(os.path.join(src, f"blob-{i:03d}.bin"), "wb") as f:
                        for j in range(64):
                            f.write(gen.get(f"{i}/{j}", min(MIB, args.size // n)))
            else:
                gen_dataset.main(["--kind", "images", "--size", str(args.size), "--out", src,
                                  "--seed", "3", "--quiet"])
            nbytes = tree_bytes(src)
            nfiles = sum(len(ns) for _, _, ns in os.walk(src))
            warm(src)
            dst = os.path.join(args.dir, "dst")
            data = os.path.join(args.dir, "weft-data")

            def weft_put():
                shutil.rmtree(data, ignore_errors=True)
                start = time.monotonic()
                subprocess.run([args.weft, "--data", data, "-q", "put", src, "/ingest"],
                               check=True)
                return nbytes / (time.monotonic() - start) / 1e6

            def cp_sync():
                shutil.rmtree(dst, ignore_errors=True)
                start = time.monotonic()
                subprocess.run(["cp", "-r", src, dst], check=True)
                fsync_tree(dst)
                return nbytes / (time.monotonic() - start) / 1e6

            a, b, ratios = benchlib.run_pairs(weft_put, cp_sync, args.pairs)
            row = benchlib.result(f"ingest {shape}", "MB/s", "cp -r + fsync", a, b, ratios,
                                  bytes=nbytes, files=nfiles, goal_ratio=0.8,
                                  meets_goal=statistics.median(ratios) >= 0.8)
            benchlib.emit(row)
            rows.append(row)
            shutil.rmtree(src, ignore_errors=True)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.rmtree(data, ignore_errors=True)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    benchlib.table(rows, ["bench", "files", "bytes", "weft", "reference", "ratio", "ratio_min",
                          "ratio_max"])
    print(f"(MB/s; {args.pairs} pairs after a warm-up, alternating weft/cp; 2 shared cores)")


if __name__ == "__main__":
    main()
