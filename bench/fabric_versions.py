#!/usr/bin/env python3
"""Dataset versions through a spoke, one kind of change at a time, against rsync.

For each pattern (tools/gen_dataset.py PATTERNS: appended files, lines or samples, deleted
files or lines, renames between class directories, re-sharding, a dense checkpoint update):
v1 is uploaded to the hub and read in full through a spoke behind `weft dev wan`; v2 then
replaces it at the hub the way a user would publish it over S3 (changed and new keys put,
removed keys deleted, unchanged keys left alone), every lease lapses, and v2 is read in full
through the spoke at its live paths. Weft's figure is every byte the emulator carried while v2
was read, both ways (requests, metadata, chunks).

The reference moves the same v1 -> v2 with `rsync -az --delete` to an rsync daemon on
loopback holding v1 (delta transfer, rsync's own compression): "Total bytes sent" + "Total
bytes received". For the checkpoint pattern `zstd -19 --long=30 --patch-from=v1 v2`, file by
file, is shown too. Goals (fabric issue): fewer bytes than rsync on every pattern, >= 50 % fewer on
append, rename and re-shard, and the checkpoint within 1.5x of zstd --patch-from. Byte counts
are deterministic for a seed; choose another --seed to check a figure was not fitted.

  /usr/bin/python3 bench/fabric_versions.py [--size 64M] [--patterns append-files,...]
      [--seed 1] [--delay-ms 20] [--rate-mbit 200]
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import time

import benchlib
import fabric_wan
import gen_dataset


def same_file(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def publish(s3, v1, v2, prefix, threads):
    """Makes the hub's prefix hold v2 where it held v1, touching only what differs."""
    old = dict(fabric_wan.files_of(v1))
    changed = [(rel, full) for rel, full in fabric_wan.files_of(v2)
               if rel not in old or not same_file(old[rel], full)]
    new_names = {rel for rel, _ in fabric_wan.files_of(v2)}
    for rel in old:
        if rel not in new_names:
            s3.delete_object(Bucket="bench", Key=f"{prefix}/{rel}")
    scratch = v2 + ".changed"
    shutil.rmtree(scratch, ignore_errors=True)
    for rel, full in changed:
        os.makedirs(os.path.dirname(os.path.join(scratch, rel)), exist_ok=True)
        os.link(full, os.path.join(scratch, rel))
    if changed:
        fabric_wan.upload(s3, scratch, prefix, threads)
    shutil.rmtree(scratch, ignore_errors=True)
    return len(changed)


class RsyncDaemon:
    """`rsync --daemon` on loopback with one writable module, `dst`, at `path`."""

    def __init__(self, workdir, path):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        conf = os.path.join(workdir, "rsyncd.conf")
        with open(conf, "w") as f:
            f.write(f"use chroot = no\nuid = {os.getuid()}\ngid = {os.getgid()}\n"
                    f"pid file = {workdir}/rsyncd.pid\n[dst]\npath = {path}\nread only = no\n")
        self.proc = subprocess.Popen(["rsync", "--daemon", "--no-detach", "--address=127.0.0.1",
                                      f"--port={self.port}", f"--config={conf}",
                                      f"--log-file={workdir}/rsyncd.log"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError("rsync --daemon did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def rsync_bytes(v1, v2, workdir):
    """Bytes `rsync -az --delete` moves to turn the daemon's copy of v1 into v2."""
    dst = os.path.join(workdir, "rsync-dst")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(v1, dst)  # copy2: mtimes kept, as a synced copy of v1 has them
    daemon = RsyncDaemon(workdir, dst)
    try:
        out = subprocess.run(["rsync", "-az", "--delete", "--stats", v2 + "/",
                              f"rsync://127.0.0.1:{daemon.port}/dst/"],
                             check=True, stdout=subprocess.PIPE).stdout.decode()
    finally:
        daemon.stop()
    sent = int(re.search(r"Total bytes sent: ([\d,]+)", out).group(1).replace(",", ""))
    received = int(re.search(r"Total bytes received: ([\d,]+)", out).group(1).replace(",", ""))
    # The copy must be v2 now, or the figure means nothing.
    got = {rel: full for rel, full in fabric_wan.files_of(dst)}
    want = dict(fabric_wan.files_of(v2))
    if got.keys() != want.keys() or not all(same_file(got[r], want[r]) for r in want):
        raise RuntimeError("rsync did not produce v2")
    shutil.rmtree(dst, ignore_errors=True)
    return sent + received


def patch_from_bytes(v1, v2):
    """zstd --patch-from of each changed file of v2 against its v1, summed, at zstd's best for
    it: -19 with a window over the whole file (-3 finds under a tenth of the matches in a
    file of 8 MB)."""
    total = 0
    old = dict(fabric_wan.files_of(v1))
    for rel, full in fabric_wan.files_of(v2):
        if rel in old and same_file(old[rel], full):
            continue
        argv = ["zstd", "-19", "--long=30", "-q", "-c", full]
        if rel in old:
            argv[1:1] = [f"--patch-from={old[rel]}"]
        total += len(subprocess.run(argv, check=True, stdout=subprocess.PIPE).stdout)
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=gen_dataset.parse_size, default=gen_dataset.parse_size("64M"))
    p.add_argument("--patterns", default=",".join(gen_dataset.PATTERNS))
    p.add_argument("--seed", type=int, default=1, help="for v1 and for the change")
    p.add_argument("--delay-ms", type=float, default=20)
    p.add_argument("--rate-mbit", type=float, default=200)
    p.add_argument("--threads", type=int, default=8, help="client threads reading at the spoke")
    p.add_argument("--dir", default=os.path.join(benchlib.ROOT, "bench", "out", "versions"))
    p.add_argument("--weft", default=benchlib.default_weft())
    args = p.parse_args()
    patterns = args.patterns.split(",")
    for pattern in patterns:
        if pattern not in gen_dataset.PATTERNS:
            p.error(f"unknown pattern {pattern!r} (known: {', '.join(gen_dataset.PATTERNS)})")
    if not os.access(args.weft, os.X_OK):
        p.error(f"no weft binary at {args.weft}: build the release preset first")
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    rows = []
    with fabric_wan.running_fabric(args) as (hub, wan, spoke):
        at_hub, at_spoke = fabric_wan.client(hub.value), fabric_wan.client(spoke.value)
        at_hub.create_bucket(Bucket="bench")
        for pattern in patterns:
            kind = gen_dataset.PATTERNS[pattern]
            v1 = os.path.join(args.dir, f"{pattern}-v1")
            v2 = os.path.join(args.dir, f"{pattern}-v2")
            gen_dataset.main(["--kind", kind, "--size", str(args.size), "--seed",
                              str(args.seed), "--out", v1, "--quiet"])
            gen_dataset.make_version(pattern, v1, v2, args.seed)
            fabric_wan.upload(at_hub, v1, pattern, args.threads)
            fabric_wan.read_all(at_spoke, v1, pattern, args.threads)
            changed = publish(at_hub, v1, v2, pattern, args.threads)
            time.sleep(1.5 * fabric_wan.LEASE_MS / 1000)  # every lease lapses
            up0, down0 = fabric_wan.wire_bytes(wan)
            size2, secs2 = fabric_wan.read_all(at_spoke, v2, pattern, args.threads)
            up1, down1 = fabric_wan.wire_bytes(wan)
            weft = (up1 - up0) + (down1 - down0)
            rs = rsync_bytes(v1, v2, args.dir)
            row = {"bench": f"fabric versions {pattern}", "unit": "bytes", "kind": kind,
                   "files": len(fabric_wan.files_of(v2)), "changed_files": changed,
                   "v2_bytes": size2, "weft": weft, "weft_up": up1 - up0,
                   "weft_down": down1 - down0, "reference": rs,
                   "reference_name": "rsync -az --delete to a daemon holding v1",
                   "ratio": round(weft / rs, 4) if rs else None,
                   "v2_seconds": round(secs2, 2), "seed": args.seed}
            if pattern == "checkpoint":
                row["zstd_patch_from"] = patch_from_bytes(v1, v2)
                row["ratio_vs_patch_from"] = round(weft / row["zstd_patch_from"], 4)
            fabric_wan.keep(rows, row, v1, v2)
    benchlib.table(rows, ["bench", "files", "changed_files", "weft", "weft_up", "weft_down",
                          "reference", "ratio", "zstd_patch_from", "v2_seconds"])
    print("(weft = bytes on the wire, both ways, to read v2 through the spoke after reading"
          " v1; reference = rsync -az delta of v1 -> v2 over loopback; ratio: lower is better)")


if __name__ == "__main__":
    main()
