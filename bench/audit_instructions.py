#!/usr/bin/env python3
"""Instructions per S3 4 KiB GET of `weft serve` with its audit log against --audit-log off,
counted by valgrind's callgrind (repeatable where wall-clock rates on a shared VM are not):
each server serves 200 warm-up GETs, its counters are zeroed, then it serves --requests more
over one keep-alive connection and the counters are dumped.

Valgrind's virtual CPU offers OpenSSL no SHA extensions, so SHA-256 (the audit chain's and
SigV4's) counts more instructions here than it runs natively with SHA-NI.

  /usr/bin/python3 bench/audit_instructions.py [--requests 1000]
"""

import argparse
import glob
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

import benchlib

ACCESS = "BENCHACCESSKEY000001"
SECRET = "bench-secret-key-0123456789"


def instructions_per_get(weft, workdir, extra, requests):
    import boto3
    from botocore.config import Config
    os.makedirs(workdir)
    out = os.path.join(workdir, "callgrind.out")
    env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET)
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", weft,
                             "--data", os.path.join(workdir, "data"), "serve", "--listen",
                             "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        line = proc.stdout.readline().decode()
        m = re.search(r"serving S3 at (http://\S+)", line)
        if not m:
            raise RuntimeError(f"weft serve did not start under valgrind: {line!r}")
        url = m.group(1)
        s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=ACCESS,
                          aws_secret_access_key=SECRET, region_name="us-east-1",
                          config=Config(signature_version="s3v4",
                                        s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="bench")
        s3.put_object(Bucket="bench", Key="small.bin", Body=os.urandom(4096))
        get = urllib.parse.urlsplit(s3.generate_presigned_url(
            "get_object", Params={"Bucket": "bench", "Key": "small.bin"}))
        conn = http.client.HTTPConnection(get.hostname, get.port, timeout=120)

        def gets(n):
            for _ in range(n):
                conn.request("GET", get.path + "?" + get.query)
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    raise RuntimeError(f"GET answered {r.status}")

        gets(200)
        subprocess.run(["callgrind_control", "--zero", str(proc.pid)], stdout=subprocess.DEVNULL,
                       check=True)
        gets(requests)
        for f in glob.glob(out + "*"):
            os.remove(f)
        subprocess.run(["callgrind_control", "--dump", str(proc.pid)], stdout=subprocess.DEVNULL,
                       check=True)
        time.sleep(1)
        total = 0
        for f in glob.glob(out + "*"):
            for line in open(f):
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
        return total / requests
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weft", default=benchlib.default_weft())
    ap.add_argument("--requests", type=int, default=1000)
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        print("valgrind is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="weft-audit-ir-") as tmp:
        on = instructions_per_get(args.weft, os.path.join(tmp, "on"), [], args.requests)
        off = instructions_per_get(args.weft, os.path.join(tmp, "off"), ["--audit-log", "off"],
                                   args.requests)
    benchlib.emit({"bench": "get_4k_instructions", "unit": "instructions/request",
                   "audited": round(on), "off": round(off), "ratio": round(on / off, 4)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
