#!/usr/bin/env python3
"""`weft mount` against the local file system and against `rclone mount`, side by side.

Three comparisons on the same bytes, each alternating Weft and its reference (A B A B) after a
warm-up, reporting the median of per-pair ratios (BENCHMARKING.md):
  1. seq-read-warm / seq-read-cold: `cat` of a 1 GiB incompressible file through
     `weft mount --data --read-only` (how a training job mounts its dataset) vs `cat` of the
     same file on the local disk (goal >= 0.8x). Cold
     means the page cache holds none of the bytes: before each read both sides drop their
     pages with posix_fadvise(DONTNEED) (the local file; the mounted file and Weft's pack
     files), so both read the disk. Warm means a second read right after the first.
  2. random-files-warm / random-files-cold: whole-file reads of randomly chosen image-like
     files (log-normal sizes, mean ~115 KB) through the same read-only mount vs the same tree
     on the local disk (goal >= 0.5x), 1 reader; then (-rw) through a read-write mount, where
     every open is a round trip to the daemon. A cold pass starts a fresh mount process (its
     chunk cache is empty) and drops the pack files' pages; the local side drops the files'.
  3. write-1g: writing the sequential-read file's bytes in 1 MiB pieces through
     `weft mount --data` and closing it (the close commits a new version, synced) vs the same
     writes to the local disk followed by fsync (no goal; recorded).
  4. floor-seq-read-cold / floor-random-files-cold: the same cold reads through Weft and
     through libfuse's own example file system, passthrough_ll (built from the Debian
     libfuse3-dev examples, mounted over the source tree with its kernel caching on): how
     close Weft comes to the least a FUSE file system costs on this machine. Skipped when the
     example or a C compiler is missing.
  5. hub-random-files-cold / -warm: the same pattern over a hub (`weft serve`) from a caching
     network mount: `weft mount --hub` (an embedded spoke) vs `rclone mount
     --vfs-cache-mode full` over the hub's S3 endpoint (goal: faster than rclone). Each pair
     mounts both afresh with empty caches: the first pass is cold, the second warm.
Client, servers and the FUSE daemons share this machine's cores.

  /usr/bin/python3 bench/mount_bench.py [--big 1G] [--images 200M] [--reads 400] [--pairs 5]
      [--only seq random floor write hub]
"""

import argparse
import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import benchlib
import gen_dataset

sys.path.insert(0, os.path.join(benchlib.ROOT, "tests", "integration"))
from mountlib import Mount, is_mounted  # noqa: E402
from s3lib import Hub, ROOT_ACCESS, ROOT_SECRET  # noqa: E402

MIB = 1 << 20


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def drop_pages(path):
    """Drops the clean cached pages of one file (no root needed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_whole(path, bufsize=128 * 1024):
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(bufsize)
            if not b:
                return n
            n += len(b)


def cat_rate(path):
    """MB/s of `cat path > /dev/null`."""
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
    return size / (time.perf_counter() - t0) / 1e6


def cold_cat(path, *behind):
    """cat_rate of path with none of its pages cached, nor those of the files behind it."""
    for p in (path, *behind):
        drop_pages(p)
    return cat_rate(path)


def files_rate(paths):
    """Files/s reading each path whole, in order."""
    t0 = time.perf_counter()
    for p in paths:
        read_whole(p)
    return len(paths) / (time.perf_counter() - t0)


def write_rate(source, target):
    """MB/s of writing source's bytes to target in 1 MiB pieces, then fsync and close."""
    size = os.path.getsize(source)
    with open(source, "rb") as f:
        data = f.read()
    t0 = time.perf_counter()
    fd = os.open(target, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        for i in range(0, size, MIB):
            os.write(fd, data[i:i + MIB])
        os.fsync(fd)
    finally:
        os.close(fd)
    return size / (time.perf_counter() - t0) / 1e6


class Remountable:
    """A `weft mount --data` that can be restarted (a cold daemon) at the same mount point."""

    def __init__(self, weft, mountpoint, extra, data):
        self.args = (weft, mountpoint, [], extra)
        self.data = data
        self.mount = Mount(*self.args, data=data)

    def restart(self):
        self.mount.stop()
        self.mount = Mount(*self.args, data=self.data)


PASSTHROUGH_SOURCE = "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c"


class PassthroughMount:
    """libfuse's example passthrough_ll over a directory: the plainest FUSE file system."""

    def __init__(self, binary, source, mountpoint):
        self.mountpoint = mountpoint
        os.makedirs(mountpoint, exist_ok=True)
        self.proc = subprocess.Popen([binary, "-f", "-o", "source=" + source, "-o",
                                      "cache=always", "-o", "timeout=86400", mountpoint],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while not is_mounted(mountpoint):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("passthrough_ll did not mount")
            time.sleep(0.02)
        # The same readahead `weft mount` sets for itself (as root).
        st = os.stat(mountpoint)
        try:
            with open(f"/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/"
                      "read_ahead_kb", "w") as f:
                f.write("1024")
        except OSError:
            pass

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.mountpoint], stderr=subprocess.DEVNULL)
        self.proc.wait(timeout=30)


def build_passthrough(out_dir):
    """Builds passthrough_ll from the Debian example source, or None when that cannot be."""
    if not os.path.exists(PASSTHROUGH_SOURCE) or shutil.which("gcc") is None:
        return None
    binary = os.path.join(out_dir, "passthrough_ll")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], capture_output=True,
                           text=True)
    if flags.returncode != 0:
        return None
    built = subprocess.run(["gcc", "-O2", PASSTHROUGH_SOURCE, *flags.stdout.split(), "-o",
                            binary], capture_output=True)
    return binary if built.returncode == 0 else None


class RcloneMount:
    """`rclone mount` of a bucket on the hub's S3 endpoint, with its full VFS cache."""

    def __init__(self, hub_url, bucket, mountpoint, cache_dir):
        os.makedirs(mountpoint, exist_ok=True)
        self.mountpoint = mountpoint
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)  # a machine-wide bundle breaks rclone's plain HTTP
        env.update({"RCLONE_CONFIG_HUB_TYPE": "s3", "RCLONE_CONFIG_HUB_PROVIDER": "Other",
                    "RCLONE_CONFIG_HUB_ACCESS_KEY_ID": ROOT_ACCESS,
                    "RCLONE_CONFIG_HUB_SECRET_ACCESS_KEY": ROOT_SECRET,
                    "RCLONE_CONFIG_HUB_ENDPOINT": hub_url, "RCLONE_CONFIG_HUB_REGION": "us-east-1",
                    "RCLONE_CONFIG": os.devnull})
        self.proc = subprocess.Popen(
            ["rclone", "mount", f"hub:{bucket}", mountpoint, "--vfs-cache-mode", "full",
             "--cache-dir", cache_dir, "--read-only"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(cache_dir + ".log"), "wb"),
            env=env)
        deadline = time.time() + 30
        while not is_mounted(mountpoint):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("rclone mount did not come up")
            time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        finally:
            if is_mounted(self.mountpoint):
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], check=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "mount"))
    ap.add_argument("--big", default="1G", help="size of the sequential-read file")
    ap.add_argument("--images", default="200M", help="bytes of image-like files")
    ap.add_argument("--reads", type=int, default=400, help="files read per random pass")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=["seq", "random", "floor", "write", "hub"])
    args = ap.parse_args()

    shutil.rmtree(args.dir, ignore_errors=True)
    src = os.path.join(args.dir, "src")
    os.makedirs(src)
    big = os.path.join(src, "big.bin")
    with open(big, "wb") as f:
        left, i = parse_size(args.big), 0
        while left > 0:
            piece = os.urandom(min(left, 16 * MIB))
            f.write(piece)
            left -= len(piece)
            i += 1
    gen_dataset.main(["--kind", "images", "--size", args.images, "--seed", "7", "--out",
                      os.path.join(src, "images"), "--quiet"])
    images = sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "images", "**"),
                                                               recursive=True)
                    if os.path.isfile(p))
    rng = random.Random(1)
    picks = [rng.choice(images) for _ in range(args.reads)]
    data = os.path.join(args.dir, "data")
    subprocess.run([args.weft, "--data", data, "-q", "put", src, "/bench"], check=True)
    rows = []

    def report(obj):
        benchlib.emit(obj)
        rows.append(obj)

    packs = [p for p in glob.glob(os.path.join(data, "packs", "**", "*"), recursive=True)
             if os.path.isfile(p)]
    local = [os.path.join(src, p) for p in picks]
    mean_kb = round(sum(os.path.getsize(p) for p in local) / len(local) / 1e3, 1)

    def fresh_cold_files(mounted):
        """files_rate of the picks through a fresh daemon (nothing in its chunk cache, no
        names or pages in the kernel), with no pack pages cached."""
        mounted.restart()
        for p in packs:
            drop_pages(p)
        return files_rate([os.path.join(mounted.mount.mountpoint, "bench", p) for p in picks])

    def random_rows(mounted, suffix):
        mp = mounted.mount.mountpoint
        on_mount = [os.path.join(mp, "bench", p) for p in picks]
        a, b, r = benchlib.run_pairs(lambda: files_rate(on_mount), lambda: files_rate(local),
                                     args.pairs)
        report(benchlib.result("random-files-warm" + suffix, "files/s", "local fs", a, b, r,
                               goal=">= 0.5", mean_kb=mean_kb))

        def weft_cold_files():
            return fresh_cold_files(mounted)

        def local_cold_files():
            for p in set(local):
                drop_pages(p)
            return files_rate(local)

        a, b, r = benchlib.run_pairs(weft_cold_files, local_cold_files, args.pairs)
        report(benchlib.result("random-files-cold" + suffix, "files/s", "local fs", a, b, r,
                               goal=">= 0.5"))

    # A dataset is mounted read-only for training: opens then cost no request at all.
    if "seq" in args.only or "random" in args.only:
        mounted = Remountable(args.weft, os.path.join(args.dir, "mnt-ro"), ["--read-only"], data)
        mp = mounted.mount.mountpoint
        try:
            mounted_big = os.path.join(mp, "bench", "big.bin")
            if "seq" in args.only:
                a, b, r = benchlib.run_pairs(lambda: cat_rate(mounted_big), lambda: cat_rate(big),
                                             args.pairs)
                report(benchlib.result("seq-read-warm", "MB/s", "cat local", a, b, r,
                                       goal=">= 0.8"))

                a, b, r = benchlib.run_pairs(lambda: cold_cat(mounted_big, *packs),
                                             lambda: cold_cat(big), args.pairs)
                report(benchlib.result("seq-read-cold", "MB/s", "cat local", a, b, r,
                                       goal=">= 0.8"))
            if "random" in args.only:
                random_rows(mounted, "")
        finally:
            mounted.mount.stop()

    # The same cold reads through libfuse's passthrough_ll, the floor for a FUSE file system.
    passthrough = build_passthrough(args.dir) if "floor" in args.only else None
    if passthrough is not None:
        mounted = Remountable(args.weft, os.path.join(args.dir, "mnt-ro"), ["--read-only"], data)
        floor = PassthroughMount(passthrough, src, os.path.join(args.dir, "mnt-floor"))
        try:
            weft_big = os.path.join(mounted.mount.mountpoint, "bench", "big.bin")
            floor_big = os.path.join(floor.mountpoint, "big.bin")

            a, b, r = benchlib.run_pairs(lambda: cold_cat(weft_big, *packs),
                                         lambda: cold_cat(floor_big, big), args.pairs)
            report(benchlib.result("floor-seq-read-cold", "MB/s", "passthrough_ll", a, b, r,
                                   goal="-"))

            def weft_cold_files():
                return fresh_cold_files(mounted)

            def floor_cold_files():
                # A fresh mount as well: no names or pages in the kernel, none on the disk.
                nonlocal floor
                floor.stop()
                for p in set(local):
                    drop_pages(p)
                floor = PassthroughMount(passthrough, src, floor.mountpoint)
                return files_rate([os.path.join(floor.mountpoint, p) for p in picks])

            a, b, r = benchlib.run_pairs(weft_cold_files, floor_cold_files, args.pairs)
            report(benchlib.result("floor-random-files-cold", "files/s", "passthrough_ll", a, b,
                                   r, goal="-"))
        finally:
            floor.stop()
            mounted.mount.stop()

    # The same reads through a read-write mount (an OPEN and a RELEASE per file), and writes.
    if "random" in args.only or "write" in args.only:
        mounted = Remountable(args.weft, os.path.join(args.dir, "mnt-rw"), [], data)
        mp = mounted.mount.mountpoint
        try:
            if "random" in args.only:
                random_rows(mounted, "-rw")
            if "write" in args.only:
                a, b, r = benchlib.run_pairs(
                    lambda: write_rate(big, os.path.join(mp, "written.bin")),
                    lambda: write_rate(big, os.path.join(args.dir, "written.bin")), args.pairs)
                report(benchlib.result("write-1g", "MB/s", "local write + fsync", a, b, r,
                                       goal="-"))
        finally:
            mounted.mount.stop()

    if "hub" in args.only:
        hub = Hub(args.weft, data)
        try:
            cold_w, cold_r, warm_w, warm_r = [], [], [], []
            for pair in range(args.pairs + 1):  # the first pair warms up
                env = dict(os.environ)
                env.update({"WEFT_HUB_ACCESS_KEY": ROOT_ACCESS,
                            "WEFT_HUB_SECRET_KEY": ROOT_SECRET})
                cache = os.path.join(args.dir, f"spoke-cache-{pair}")
                wmp = os.path.join(args.dir, f"wmnt-{pair}")
                w = Mount(args.weft, wmp, ["--hub", hub.url, "--cache", cache, "--portal",
                                           "/bench", "--site", f"bench-{pair}"], env=env)
                try:
                    paths = [os.path.join(wmp, "bench", p) for p in picks]
                    cw, ww = files_rate(paths), files_rate(paths)
                finally:
                    w.stop()
                rmp = os.path.join(args.dir, f"rmnt-{pair}")
                r = RcloneMount(hub.url, "bench", rmp, os.path.join(args.dir, f"rclone-{pair}"))
                try:
                    paths = [os.path.join(rmp, p) for p in picks]
                    cr, wr = files_rate(paths), files_rate(paths)
                finally:
                    r.stop()
                if pair > 0:
                    cold_w.append(cw)
                    cold_r.append(cr)
                    warm_w.append(ww)
                    warm_r.append(wr)
            report(benchlib.result("hub-random-files-cold", "files/s", "rclone mount", cold_w,
                                   cold_r, [x / y for x, y in zip(cold_w, cold_r)],
                                   goal="> 1"))
            report(benchlib.result("hub-random-files-warm", "files/s", "rclone mount", warm_w,
                                   warm_r, [x / y for x, y in zip(warm_w, warm_r)],
                                   goal="> 1"))
        finally:
            hub.stop()

    benchlib.table(rows, ["bench", "unit", "weft", "reference", "reference_name", "ratio",
                          "ratio_min", "ratio_max", "goal"])


if __name__ == "__main__":
    main()
