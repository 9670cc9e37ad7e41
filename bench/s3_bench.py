#!/usr/bin/env python3
"""S3 benchmark: `weft serve` against nginx serving the same bytes from files on the same disk,
side by side in one run (../shared/BENCHMARKING.md: alternate A B A B after a warm-up, report
the median of per-pair ratios with min and max).

  1. GET of a 1 GiB object with curl                       (goal: >= 0.9x nginx)
  2. 4 KiB GETs, wrk at 16 connections                       (goal: >= 0.5x nginx requests/s)
  3. 4 KiB GET latency at a fixed 1,000 requests/s over 4 connections (bench/http_load;
     goal: mean < 1 ms), p50 and p99 for both servers
  4. PUT of 1 GiB of fresh random bytes with curl against `cp` of the same file to the same
     disk followed by fsync

Weft is reached through presigned URLs (SigV4, verified on every request), so the clients
need no signing of their own.

  /usr/bin/python3 bench/s3_bench.py [--size 1G] [--pairs 3] [--dir bench/out/s3]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import benchlib

ACCESS = "BENCHACCESSKEY000001"
SECRET = "bench-secret-key-0123456789"


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def random_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 64 << 20)
            f.write(os.urandom(n))
            left -= n


class Weft:
    def __init__(self, binary, data):
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET)
        self.proc = subprocess.Popen([binary, "--data", data, "serve", "--listen",
                                      "127.0.0.1:0"], stdout=subprocess.PIPE, env=env)
        line = self.proc.stdout.readline().decode()
        m = re.search(r"serving S3 at (http://\S+)", line)
        if not m:
            raise RuntimeError(f"weft serve did not start: {line!r}")
        self.url = m.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])
        import boto3
        from botocore.config import Config
        self.s3 = boto3.client("s3", endpoint_url=self.url, aws_access_key_id=ACCESS,
                               aws_secret_access_key=SECRET, region_name="us-east-1",
                               config=Config(signature_version="s3v4",
                                             s3={"addressing_style": "path"}))

    def presign(self, method, key):
        return self.s3.generate_presigned_url(method, Params={"Bucket": "bench", "Key": key},
                                              ExpiresIn=7 * 24 * 3600)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


class Nginx:
    def __init__(self, root, workdir):
        self.port = free_port()
        conf = os.path.join(workdir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes auto;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path {workdir}/body;
  proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fastcgi;
  uwsgi_temp_path {workdir}/uwsgi;
  scgi_temp_path {workdir}/scgi;
  server {{ listen 127.0.0.1:{self.port}; root {root}; }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-p", workdir, "-c", conf, "-g",
                                      "daemon off;"], stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{self.port}/"]
                              ).returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        self.proc.wait(30)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def curl_get_rate(url):
    out = subprocess.run(["curl", "-s", "-f", "-o", "/dev/null", "-w", "%{speed_download}", url],
                         stdout=subprocess.PIPE, check=True).stdout
    return float(out) / 1e6  # MB/s


def wrk_rate(url, seconds):
    out = subprocess.run(["wrk", "-t2", "-c16", f"-d{seconds}s", url], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    if "Non-2xx" in out:
        raise RuntimeError("wrk saw errors:\n" + out)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def fixed_rate(http_load, port, target, seconds):
    out = subprocess.run([http_load, "127.0.0.1", str(port), target, "1000", "4", str(seconds)],
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--http-load", default=None)
    ap.add_argument("--size", default="1G")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "s3"))
    ap.add_argument("--only", nargs="*", default=["get", "small", "latency", "put"],
                    help="rows to run: get (1 GiB), small (4 KiB wrk), latency, put")
    args = ap.parse_args()
    size = parse_size(args.size)
    http_load = args.http_load or os.path.join(os.path.dirname(os.path.dirname(args.weft)),
                                               "..", "bench", "http_load")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    www = os.path.join(args.dir, "www", "bench")
    os.makedirs(www)
    big = os.path.join(www, "big.bin")
    small = os.path.join(www, "small.bin")
    random_file(big, size)
    random_file(small, 4096)
    data = os.path.join(args.dir, "weft-data")
    subprocess.run([args.weft, "--data", data, "put", "-q", big, small, "/bench/"], check=True)

    weft = Weft(args.weft, data)
    nginx = Nginx(os.path.join(args.dir, "www"), args.dir)
    rows = []
    try:
        big_url = weft.presign("get_object", "big.bin")
        small_url = weft.presign("get_object", "small.bin")
        small_target = small_url.split(str(weft.port), 1)[1]
        nginx_big = f"http://127.0.0.1:{nginx.port}/bench/big.bin"
        nginx_small = f"http://127.0.0.1:{nginx.port}/bench/small.bin"

        if "get" in args.only:
            a, b, r = benchlib.run_pairs(lambda: curl_get_rate(big_url),
                                         lambda: curl_get_rate(nginx_big), args.pairs)
            rows.append(benchlib.result("get_1gib", "MB/s", "nginx", a, b, r, goal=">= 0.9"))
            benchlib.emit(rows[-1])

        if "small" in args.only:
            a, b, r = benchlib.run_pairs(lambda: wrk_rate(small_url, args.seconds),
                                         lambda: wrk_rate(nginx_small, args.seconds), args.pairs)
            rows.append(benchlib.result("get_4k_wrk_c16", "req/s", "nginx", a, b, r,
                                        goal=">= 0.5"))
            benchlib.emit(rows[-1])

        latency = (("weft", weft.port, small_target), ("nginx", nginx.port, "/bench/small.bin"))
        for name, port, target in latency if "latency" in args.only else ():
            lat = fixed_rate(http_load, port, target, args.seconds * 2)
            row = {"bench": f"get_4k_latency_1000rps_{name}", "unit": "us", **lat,
                   "goal": "mean < 1000" if name == "weft" else ""}
            rows.append(row)
            benchlib.emit(row)

        def weft_put():
            src = os.path.join(args.dir, "put.bin")
            random_file(src, size)
            url = weft.presign("put_object", f"put-{time.time_ns()}.bin")
            t = time.perf_counter()
            subprocess.run(["curl", "-s", "-f", "-o", "/dev/null", "-T", src, url], check=True)
            return size / (time.perf_counter() - t) / 1e6

        def cp_put():
            src = os.path.join(args.dir, "put.bin")
            dst = os.path.join(args.dir, "cp.bin")
            t = time.perf_counter()
            subprocess.run(["cp", src, dst], check=True)
            fd = os.open(dst, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            rate = size / (time.perf_counter() - t) / 1e6
            os.remove(dst)
            return rate

        if "put" in args.only:
            a, b, r = benchlib.run_pairs(weft_put, cp_put, args.pairs)
            rows.append(benchlib.result("put_1gib", "MB/s", "cp+fsync", a, b, r, goal=">= 0.8"))
            benchlib.emit(rows[-1])
    finally:
        weft.stop()
        nginx.stop()
    benchlib.table(rows, ["bench", "unit", "weft", "reference", "ratio", "ratio_min",
                          "ratio_max", "mean_us", "p50_us", "p99_us", "goal"])


if __name__ == "__main__":
    sys.exit(main())
