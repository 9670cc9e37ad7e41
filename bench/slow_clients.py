#!/usr/bin/python3
"""Slow clients: a normal client's latency on `weft serve` while hundreds of hostile
connections are open, against the same client on the same hub with none (the goal: p99 within
2x). Hostile connections, in equal numbers: anonymous uploads and SigV4-signed uploads that
send their head and 10 body bytes and go quiet (the signed ones hold a request each), half
request heads, and silent connections. Each pair times N keep-alive GETs of a 4 KiB object
(presigned, so each is authenticated) with no hostile connection open, then with them open
(opened afresh for each pair, well inside the hub's 20 s body and header timeouts).

Usage: /usr/bin/python3 bench/slow_clients.py [--slow 500] [--gets 1000] [--pairs 5]
Client and hub share the machine's cores; the hostile sockets cost the hub nothing but a
thread each for the signed uploads."""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
from s3_bench import ACCESS, SECRET, Weft  # noqa: E402

sys.path.insert(0, os.path.join(benchlib.ROOT, "tests", "integration"))
from s3lib import signed_put_head, time_gets  # noqa: E402


def open_hostile(weft, n, round_):
    sockets = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", weft.port))
        kind = i % 4
        if kind == 0:
            s.sendall(b"PUT /bench/anon HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n"
                      b"0123456789")
        elif kind == 1:
            s.sendall(signed_put_head(weft.url, "bench", f"slow-{round_}-{i}", 1000000, ACCESS,
                                      SECRET) + b"0123456789")
        elif kind == 2:
            s.sendall(b"GET /bench/small HTTP/1.1\r\nHost: h\r\nX-Slow: ")
        sockets.append(s)
    time.sleep(1)  # the hub takes them all in
    return sockets


def p99(samples):
    return statistics.quantiles(samples, n=100)[98]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--slow", type=int, default=500, help="hostile connections")
    ap.add_argument("--gets", type=int, default=1000, help="GETs timed per run")
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="weft-slow-")
    weft = Weft(args.weft, os.path.join(work, "data"))
    try:
        weft.s3.create_bucket(Bucket="bench")
        weft.s3.put_object(Bucket="bench", Key="small", Body=os.urandom(4096))
        url = weft.presign("get_object", "small")
        time_gets(url, 200)  # warm-up
        quiet_p99, loaded_p99, quiet_mean, loaded_mean, ratios = [], [], [], [], []
        for round_ in range(args.pairs):
            quiet = time_gets(url, args.gets)
            hostile = open_hostile(weft, args.slow, round_)
            loaded = time_gets(url, args.gets)
            for s in hostile:
                s.close()
            quiet_p99.append(p99(quiet))
            loaded_p99.append(p99(loaded))
            quiet_mean.append(statistics.mean(quiet))
            loaded_mean.append(statistics.mean(loaded))
            ratios.append(p99(loaded) / p99(quiet))
            time.sleep(1)  # the closed sockets' requests end
        row = benchlib.result("slow_clients_p99", "ms", "no hostile connections",
                              [x * 1e3 for x in loaded_p99], [x * 1e3 for x in quiet_p99],
                              ratios, slow_connections=args.slow, gets=args.gets,
                              mean_ms_loaded=round(statistics.median(loaded_mean) * 1e3, 4),
                              mean_ms_quiet=round(statistics.median(quiet_mean) * 1e3, 4))
        benchlib.emit(row)
        benchlib.table([row], ["bench", "weft", "reference", "ratio", "ratio_min", "ratio_max",
                               "mean_ms_loaded", "mean_ms_quiet"])
        print("(weft = p99 ms with the hostile connections open; reference = p99 ms without; "
              "goal: ratio <= 2)")
    finally:
        weft.proc.terminate()
        weft.proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
