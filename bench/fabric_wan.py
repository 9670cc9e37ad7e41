#!/usr/bin/env python3
"""WAN benchmark for hub and spokes: bytes on the wire and time to read datasets through a
spoke behind the WAN emulator, next to what a manual copy would move.

For each generated dataset kind: v1 is uploaded to the hub, then read in full through a spoke
behind `weft dev wan` (one-way delay, rate limit), and read again once the hub's leases
(--lease-ms, 1 s here) have lapsed (goal: metadata only, <= 2 % of the dataset's bytes); then
a v2 with 10 % of its files changed replaces it at the hub and is read in full again. The emulator counts every byte that crossed
towards the spoke (HTTP, metadata and chunks). References, on the same bytes:
  - initial copy:  tar | zstd -3 of v1
  - new version:   tar | zstd -3 of v2 (copying the version again), and rsync -z --checksum --no-whole-file
                   of v2 onto v1 (rsync's delta transfer; "Total bytes sent" + "received").
Goals (DESIGN.md §8): a new version moves >= 30 % fewer bytes than tar | zstd, and no more than
rsync -z. Byte counts are deterministic (fixed seeds); times are reported as measured, with the
link-rate bound (bytes / rate) beside them, since round trips, not bytes, bound small files.

  /usr/bin/python3 bench/fabric_wan.py [--size 64M] [--kinds images,shards,jsonl,tensors]
      [--delay-ms 20] [--rate-mbit 200] [--threads 8]
"""

import argparse
import concurrent.futures
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import benchlib
import gen_dataset

sys.path.insert(0, os.path.join(benchlib.ROOT, "tests", "integration"))
ACCESS = "WEFTBENCHROOTKEY0001"
SECRET = "weft-bench-root-secret-0123456789abcdefgh"
REGION = "us-east-1"
LEASE_MS = 1000


class Proc:
    """A long-running weft command; `ready` is a regex whose group 1 is captured."""

    def __init__(self, argv, ready, env=None):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env)
        self.lines = []
        self.value = None
        got = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.lines.append(line.decode(errors="replace"))
                m = re.search(ready, self.lines[-1])
                if m and self.value is None:
                    self.value = m.group(1)
                    got.set()
            got.set()

        threading.Thread(target=read, daemon=True).start()
        if not got.wait(30) or self.value is None:
            self.proc.kill()
            raise RuntimeError(f"{argv[:3]} did not start: {''.join(self.lines)}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def wire_bytes(wan):
    """Asks the emulator for its counters (SIGHUP): (bytes upstream, bytes downstream)."""
    before = len(wan.lines)
    wan.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in wan.lines[before:]:
            m = re.search(r"upstream (\d+), downstream (\d+)", line)
            if m:
                return int(m.group(1)), int(m.group(2))
        time.sleep(0.01)
    raise RuntimeError("the WAN emulator did not report its counters")


def downstream_bytes(wan):
    """Bytes the emulator carried towards the spoke."""
    return wire_bytes(wan)[1]


def client(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=ACCESS,
                        aws_secret_access_key=SECRET, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"},
                                      max_pool_connections=32, read_timeout=300))


def files_of(root):
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            full = os.path.join(d, n)
            out.append((os.path.relpath(full, root), full))
    return sorted(out)


def upload(s3, root, prefix, threads):
    def put(item):
        rel, full = item
        with open(full, "rb") as f:
            s3.put_object(Bucket="bench", Key=f"{prefix}/{rel}", Body=f.read())
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(put, files_of(root)))


def read_all(s3, root, prefix, threads):
    """Reads every file of the dataset through `s3`, checking it against the local copy."""
    def get(item):
        rel, full = item
        body = s3.get_object(Bucket="bench", Key=f"{prefix}/{rel}")["Body"].read()
        with open(full, "rb") as f:
            if body != f.read():
                raise RuntimeError(f"{rel}: bytes differ")
        return len(body)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(get, files_of(root)))
    return total, time.monotonic() - start


def tar_zstd_bytes(root):
    tar = subprocess.Popen(["tar", "-C", root, "-cf", "-", "."], stdout=subprocess.PIPE)
    zstd = subprocess.run(["zstd", "-3", "-T1", "-c"], stdin=tar.stdout, stdout=subprocess.PIPE,
                          check=True)
    tar.stdout.close()
    tar.wait()
    return len(zstd.stdout)


def rsync_delta_bytes(v1, v2, scratch):
    """Bytes rsync -z moves to turn a copy of v1 into v2 (delta transfer forced on)."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(v1, scratch)
    # --checksum: generated files keep size and mtime, which rsync's quick check would trust.
    out = subprocess.run(["rsync", "-a", "-z", "--checksum", "--no-whole-file", "--delete", "--stats",
                          v2 + "/", scratch + "/"], check=True, stdout=subprocess.PIPE).stdout
    text = out.decode()
    sent = int(re.search(r"Total bytes sent: ([\d,]+)", text).group(1).replace(",", ""))
    received = int(re.search(r"Total bytes received: ([\d,]+)", text).group(1).replace(",", ""))
    shutil.rmtree(scratch, ignore_errors=True)
    return sent + received


def fabric_env():
    return dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET,
                WEFT_HUB_ACCESS_KEY=ACCESS, WEFT_HUB_SECRET_KEY=SECRET)


def start_fabric(args, procs):
    """A hub (--lease-ms LEASE_MS), `weft dev wan` in front of it (args.delay_ms,
    args.rate_mbit) and a spoke behind that serving /bench, under args.dir; each appended to
    procs as it starts, for the caller to stop. Returns (hub, wan, spoke)."""
    env = fabric_env()
    hub = Proc([args.weft, "--data", os.path.join(args.dir, "hub"), "serve", "--listen",
                "127.0.0.1:0", "--lease-ms", str(LEASE_MS)], r"serving S3 at (http://\S+)", env)
    procs.append(hub)
    wan = Proc([args.weft, "dev", "wan", "--listen", "127.0.0.1:0", "--target",
                hub.value.removeprefix("http://"), "--delay-ms", str(args.delay_ms),
                "--rate-mbit", str(args.rate_mbit)], r"WAN link (\S+) ->", env)
    procs.append(wan)
    spoke = Proc([args.weft, "spoke", "--hub", "http://" + wan.value, "--cache",
                  os.path.join(args.dir, "spoke"), "--site", "bench", "--portal", "/bench",
                  "--listen", "127.0.0.1:0"], r"serving S3 at (http://\S+)", env)
    procs.append(spoke)
    return hub, wan, spoke


@contextlib.contextmanager
def running_fabric(args):
    """start_fabric's (hub, wan, spoke), stopped and args.dir removed on the way out."""
    procs = []
    try:
        yield start_fabric(args, procs)
    finally:
        for proc in reversed(procs):
            proc.stop()
        shutil.rmtree(args.dir, ignore_errors=True)


def keep(rows, row, *trees):
    """Emits a finished row and removes the datasets it was measured on."""
    benchlib.emit(row)
    rows.append(row)
    for tree in trees:
        shutil.rmtree(tree, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=gen_dataset.parse_size, default=gen_dataset.parse_size("64M"))
    p.add_argument("--kinds", default="images,shards,jsonl,tensors")
    p.add_argument("--delay-ms", type=float, default=20)
    p.add_argument("--rate-mbit", type=float, default=200)
    p.add_argument("--threads", type=int, default=8, help="client threads reading at the spoke")
    p.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "fabric"))
    p.add_argument("--weft", default=benchlib.default_weft())
    args = p.parse_args()
    if not os.access(args.weft, os.X_OK):
        p.error(f"no weft binary at {args.weft}: build the release preset first")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    rows = []
    with running_fabric(args) as (hub, wan, spoke):
        at_hub, at_spoke = client(hub.value), client(spoke.value)
        at_hub.create_bucket(Bucket="bench")
        rate = args.rate_mbit * 1e6 / 8
        for kind in args.kinds.split(","):
            v1, v2 = os.path.join(args.dir, f"{kind}-v1"), os.path.join(args.dir, f"{kind}-v2")
            gen_dataset.main(["--kind", kind, "--size", str(args.size), "--seed", "1", "--out",
                              v1, "--quiet"])
            gen_dataset.mutate(v1, v2, 0.1, 2)
            upload(at_hub, v1, kind, args.threads)
            before = downstream_bytes(wan)
            size1, secs1 = read_all(at_spoke, v1, kind, args.threads)
            wire1 = downstream_bytes(wan) - before
            time.sleep(1.5 * LEASE_MS / 1000)  # every lease lapses
            before = downstream_bytes(wan)
            read_all(at_spoke, v1, kind, args.threads)
            reread = downstream_bytes(wan) - before
            # v2 replaces v1 at the same keys (files v2 removed are removed from the bucket).
            names2 = {rel for rel, _ in files_of(v2)}
            for rel, _ in files_of(v1):
                if rel not in names2:
                    at_hub.delete_object(Bucket="bench", Key=f"{kind}/{rel}")
            upload(at_hub, v2, kind, args.threads)
            before = downstream_bytes(wan)
            size2, secs2 = read_all(at_spoke, v2, kind, args.threads)
            wire2 = downstream_bytes(wan) - before
            tz1, tz2 = tar_zstd_bytes(v1), tar_zstd_bytes(v2)
            rs2 = rsync_delta_bytes(v1, v2, os.path.join(args.dir, "rsync"))
            row = {"bench": f"fabric wan {kind}", "unit": "bytes", "files": len(files_of(v2)),
                   "v1_bytes": size1, "v1_wire": wire1, "v1_tar_zstd": tz1,
                   "v1_ratio": round(wire1 / tz1, 4), "v1_seconds": round(secs1, 2),
                   "v1_link_bound_seconds": round(wire1 / rate, 2),
                   "reread_wire": reread, "reread_fraction": round(reread / size1, 4),
                   "v2_bytes": size2, "weft": wire2, "reference": tz2,
                   "reference_name": "tar | zstd -3 of v2", "ratio": round(wire2 / tz2, 4),
                   "rsync_z": rs2, "ratio_vs_rsync": round(wire2 / rs2, 4) if rs2 else None,
                   "v2_seconds": round(secs2, 2),
                   "delay_ms": args.delay_ms, "rate_mbit": args.rate_mbit,
                   "threads": args.threads}
            keep(rows, row, v1, v2)
    benchlib.table(rows, ["bench", "files", "v1_wire", "v1_tar_zstd", "v1_seconds",
                          "v1_link_bound_seconds", "reread_wire", "reread_fraction", "weft",
                          "reference", "ratio", "rsync_z",
                          "ratio_vs_rsync", "v2_seconds"])
    print("(v1 = first read of a new dataset through the spoke; reread = the same after the"
          " leases lapsed; weft = bytes on the wire to read"
          " v2 after 10 % of files changed; reference = tar | zstd -3 of v2; rsync_z = rsync -z"
          " delta of v1 -> v2; ratios: lower is better)")


if __name__ == "__main__":
    main()
