#!/usr/bin/env python3
"""Audit log cost: S3 4 KiB GET and PUT request rates of `weft serve` with its audit log (the
default) against the same build with --audit-log off, side by side in one run
(../shared/BENCHMARKING.md: a warm-up, then A B A B, the median of per-pair ratios with min and
max). Goal (issue 26): audited at most 5 % slower, a ratio >= 0.95. On two cores shared with
the load generator the rates are noisy, so each run also reports the server's CPU per request
(user + system, /proc) with and without the audit log: the cost the log adds, pair by pair.

Both servers run from their own data directory on the same disk; wrk drives 16 connections at
presigned URLs (SigV4 verified on every request). PUTs overwrite one key, so every request
commits a version (two fsyncs) and writes an audit record.

  /usr/bin/python3 bench/audit_bench.py [--pairs 5] [--seconds 5] [--dir bench/out/audit]
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys

import benchlib

ACCESS = "BENCHACCESSKEY000001"
SECRET = "bench-secret-key-0123456789"


class Weft:
    def __init__(self, binary, data, extra):
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET)
        self.proc = subprocess.Popen([binary, "--data", data, "serve", "--listen",
                                      "127.0.0.1:0", *extra], stdout=subprocess.PIPE, env=env)
        line = self.proc.stdout.readline().decode()
        m = re.search(r"serving S3 at (http://\S+)", line)
        if not m:
            raise RuntimeError(f"weft serve did not start: {line!r}")
        self.url = m.group(1)
        import boto3
        from botocore.config import Config
        self.s3 = boto3.client("s3", endpoint_url=self.url, aws_access_key_id=ACCESS,
                               aws_secret_access_key=SECRET, region_name="us-east-1",
                               config=Config(signature_version="s3v4",
                                             s3={"addressing_style": "path"}))
        self.s3.create_bucket(Bucket="bench")
        self.s3.put_object(Bucket="bench", Key="small.bin", Body=os.urandom(4096))

    def presign(self, method, key):
        return self.s3.generate_presigned_url(method, Params={"Bucket": "bench", "Key": key},
                                              ExpiresIn=7 * 24 * 3600)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def cpu_seconds(pid):
    """User + system CPU the process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_run(weft, url, seconds, script=None):
    """(requests/s, server CPU microseconds per request) of one wrk run."""
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", url]
    if script:
        cmd[1:1] = ["-s", script]
    cpu = cpu_seconds(weft.proc.pid)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout.decode()
    cpu = cpu_seconds(weft.proc.pid) - cpu
    if "Non-2xx" in out:
        raise RuntimeError("wrk saw errors:\n" + out)
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return rate, cpu * 1e6 / max(requests, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "audit"))
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    put_script = os.path.join(args.dir, "put.lua")
    with open(put_script, "w") as f:
        f.write('wrk.method = "PUT"\nwrk.body = string.rep("w", 4096)\n')

    audited = Weft(args.weft, os.path.join(args.dir, "audited"), [])
    plain = Weft(args.weft, os.path.join(args.dir, "plain"), ["--audit-log", "off"])
    rows = []
    try:
        for name, method, key, script in (("get_4k_wrk_c16", "get_object", "small.bin", None),
                                          ("put_4k_wrk_c16", "put_object", "put.bin",
                                           put_script)):
            on, off = audited.presign(method, key), plain.presign(method, key)
            cpu = {"on": [], "off": []}

            def run(server, url, which):
                rate, us = wrk_run(server, url, args.seconds, script)
                cpu[which].append(us)
                return rate

            a, b, r = benchlib.run_pairs(lambda: run(audited, on, "on"),
                                         lambda: run(plain, off, "off"), args.pairs)
            # The warm-up pair is not counted.
            on_us, off_us = cpu["on"][1:], cpu["off"][1:]
            cost = [x / y for x, y in zip(on_us, off_us)]
            rows.append(benchlib.result(name, "req/s", "audit off", a, b, r, goal=">= 0.95",
                                        cpu_us_on=round(statistics.median(on_us), 2),
                                        cpu_us_off=round(statistics.median(off_us), 2),
                                        cpu_ratio=round(statistics.median(cost), 3),
                                        cpu_ratio_min=round(min(cost), 3),
                                        cpu_ratio_max=round(max(cost), 3)))
            benchlib.emit(rows[-1])
    finally:
        audited.stop()
        plain.stop()
    records = sum(1 for _ in open(os.path.join(args.dir, "audited", "audit.log")))
    verify = subprocess.run([args.weft, "--data", os.path.join(args.dir, "audited"), "audit",
                             "verify"], stdout=subprocess.PIPE, text=True)
    print(f"audit log: {records} records; {verify.stdout.strip()}")
    benchlib.table(rows, ["bench", "unit", "weft", "reference", "ratio", "ratio_min",
                          "ratio_max", "goal", "cpu_us_on", "cpu_us_off", "cpu_ratio",
                          "cpu_ratio_min", "cpu_ratio_max"])
    return verify.returncode


if __name__ == "__main__":
    sys.exit(main())
