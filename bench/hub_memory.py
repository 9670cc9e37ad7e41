#!/usr/bin/python3
"""Hub memory: the resident size of `weft serve` before, during and after a burst of clients,
and once it has been quiet for a while (when it hands memory nothing holds back to the kernel).

Each of --clients threads PUTs and GETs --object-kib objects of its own (--keys of them,
rewritten in turn) through boto3 for --seconds; the hub's VmRSS is sampled every 0.25 s from /proc. Reported: at start, the peak
under load, right after the load, and after --idle seconds with no traffic; once per
--memory-cache value given.

Usage: /usr/bin/python3 bench/hub_memory.py [--clients 32] [--seconds 20] [--object-kib 8192]
                                           [--idle 25] [--memory-cache 256M --memory-cache 32M]
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from s3_bench import ACCESS, SECRET  # noqa: E402


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def start_hub(binary, data, memory_cache):
    env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET)
    proc = subprocess.Popen([binary, "--data", data, "serve", "--listen", "127.0.0.1:0",
                             "--memory-cache", memory_cache], stdout=subprocess.PIPE, env=env)
    line = proc.stdout.readline().decode()
    m = re.search(r"serving S3 at (http://\S+)", line)
    if not m:
        raise RuntimeError(f"weft serve did not start: {line!r}")
    return proc, m.group(1)


def client(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=ACCESS,
                        aws_secret_access_key=SECRET, region_name="us-east-1",
                        config=Config(signature_version="s3v4", s3={"addressing_style": "path"},
                                      max_pool_connections=4))


def run(binary, memory_cache, args):
    workdir = tempfile.mkdtemp(prefix="weft-memory-")
    proc, url = start_hub(binary, os.path.join(workdir, "data"), memory_cache)
    try:
        client(url).create_bucket(Bucket="bench")
        time.sleep(1)
        start = rss_mib(proc.pid)
        body = os.urandom(args.object_kib << 10)
        stop = time.time() + args.seconds
        errors = []
        moved = [0] * args.clients

        def work(i):
            s3 = client(url)
            n = 0
            try:
                while time.time() < stop:
                    key = f"c{i}/o{n % args.keys}"
                    # Objects up to 1 MiB are fresh bytes each time (new chunks, as images
                    # are); larger ones share a body whose first bytes differ.
                    data = (os.urandom(len(body)) if len(body) <= 1 << 20
                            else f"{i}/{n}".encode().ljust(16) + body[16:])
                    s3.put_object(Bucket="bench", Key=key, Body=data)
                    got = s3.get_object(Bucket="bench", Key=key)["Body"].read()
                    if got != data:
                        errors.append(f"{key}: {len(got)} bytes")
                    moved[i] += 2 * len(body)
                    n += 1
            except Exception as e:  # noqa: BLE001  (reported, not hidden)
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        peak = start
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_mib(proc.pid))
            time.sleep(0.25)
        after_load = rss_mib(proc.pid)
        time.sleep(args.idle)
        idle = rss_mib(proc.pid)
        return {"memory_cache": memory_cache, "start_mib": round(start, 1),
                "peak_mib": round(peak, 1), "after_load_mib": round(after_load, 1),
                "after_idle_mib": round(idle, 1), "moved_mib": sum(moved) >> 20,
                "errors": errors[:3]}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--object-kib", type=int, default=8192)
    ap.add_argument("--idle", type=float, default=25)
    ap.add_argument("--keys", type=int, default=4, help="objects per client, rewritten in turn")
    ap.add_argument("--memory-cache", action="append", default=None)
    args = ap.parse_args()
    rows = [run(args.weft, m, args) for m in (args.memory_cache or ["256M", "32M"])]
    benchlib.table(rows, ["memory_cache", "start_mib", "peak_mib", "after_load_mib",
                          "after_idle_mib", "moved_mib"])
    for r in rows:
        benchlib.emit(dict(r, bench="hub_memory"))


if __name__ == "__main__":
    main()
