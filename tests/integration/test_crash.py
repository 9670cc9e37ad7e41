"""kill -9 of a real `weft put` at random moments: every file whose `committed` line was
printed must read back byte-identical, nothing may read back torn, and fsck must be clean
after every round. Also: a kill during a large streamed stdin overwrite leaves the previous
version intact."""

import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

from weftlib import MIB, WeftTestCase, incompressible, read_bytes, tree_digests

ROUNDS = int(os.environ.get("WEFT_CRASH_ROUNDS", "20"))
LINE = re.compile(rb"^committed (\S+) (\d+) ([0-9a-f]{32})$")


class KilledPut:
    """A `weft put -v` whose stdout lines are collected by a thread as they arrive."""

    def __init__(self, cmd, stdin=None):
        self.proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip(b"\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for_lines(self, n, timeout):
        with self.cond:
            self.cond.wait_for(lambda: len(self.lines) >= n or self.proc.poll() is not None,
                               timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.lines


class CrashTest(WeftTestCase):
    FILES = 300  # more than `weft put` commits in one group (256), so a put makes several

    def make_tree(self, rnd):
        """About 20 MB of fresh content per round, so every round writes new packs."""
        rng = random.Random(rnd)
        root = self.path(f"tree-{rnd}")
        for i in range(self.FILES):
            sizes = [1_100_000, 2_500_000] if i % 30 == 0 else [0, 1, 4096, 20_000, 70_000]
            size = rng.choice(sizes)
            self.write_file(f"tree-{rnd}/d{i % 4}/f{i:03d}.bin",
                            incompressible(f"{rnd}/{i}", size))
        return root

    def check_round(self, rnd, src, dest, lines, rng):
        committed = {}
        for line in lines:
            m = LINE.match(line)
            self.assertIsNotNone(m, f"unexpected output line {line!r}")
            committed[m.group(1).decode()] = (int(m.group(2)), m.group(3).decode())
        want = tree_digests(src)
        # Every acknowledged file is there with its bytes; nothing present is torn.
        got_dir = self.path(f"got-{rnd}")
        proc = self.weft("get", dest, got_dir, check=False)
        if proc.returncode != 0:
            self.assertEqual(committed, {}, f"round {rnd}: get failed but files were "
                             f"acknowledged: {proc.stderr!r}")
            got = {}
        else:
            got = tree_digests(got_dir)
        for path, (size, etag) in committed.items():
            rel = os.path.relpath(path, dest)
            self.assertIn(rel, got, f"round {rnd}: acknowledged {path} is missing")
            self.assertEqual(size, os.path.getsize(os.path.join(src, rel)))
            self.assertEqual(etag, hashlib.md5(read_bytes(os.path.join(src, rel))).hexdigest())
        for rel, digest in got.items():
            self.assertEqual(digest, want.get(rel), f"round {rnd}: {rel} differs from source")
        # A few acknowledged files also through `weft cat`, as a reader would.
        for path in rng.sample(sorted(committed), min(3, len(committed))):
            rel = os.path.relpath(path, dest)
            self.assertEqual(hashlib.sha256(self.weft("cat", path).stdout).hexdigest(),
                             want[rel])
        self.assert_fsck_clean()
        return len(committed)

    def test_kill_during_tree_put(self):
        rng = random.Random(1234)
        # Round 0 runs to completion and times a put, to spread kill moments over it.
        src = self.make_tree(0)
        start = time.monotonic()
        self.weft("put", "-v", src, "/dst-0")
        full = time.monotonic() - start
        self.assertEqual(tree_digests(src), tree_digests(self.weft_get("/dst-0")))
        acknowledged = []
        for rnd in range(1, ROUNDS + 1):
            src = self.make_tree(rnd)
            dest = f"/dst-{rnd}"
            put = KilledPut([self.bin, "--data", self.data, "put", "-v", src, dest])
            if rnd % 2:
                put.wait_for_lines(rng.randint(1, 30), timeout=120)
                time.sleep(rng.uniform(0, 0.02))  # land between or inside commits
            else:
                time.sleep(rng.uniform(0, full * 1.1))  # a random moment, also during start-up
            lines = put.kill()
            acknowledged.append(self.check_round(rnd, src, dest, lines, rng))
            shutil.rmtree(src)
        print(f"\nfiles acknowledged before each kill (of {self.FILES}): {acknowledged}",
              file=sys.stderr)
        self.assertGreater(sum(acknowledged), 0, "no round got as far as one commit")
        self.assertTrue(any(0 < n < self.FILES for n in acknowledged), "no kill landed mid-put")

    def weft_get(self, path):
        out = self.path("get-" + path.strip("/").replace("/", "_"))
        self.weft("get", path, out)
        return out

    def test_kill_during_streamed_stdin_overwrite_keeps_previous_version(self):
        old = incompressible("old", 24 * MIB + 17)
        self.weft("put", "-", "/big.bin", input=old)
        rng = random.Random(99)
        for rnd in range(3):
            put = KilledPut([self.bin, "--data", self.data, "put", "-v", "-", "/big.bin"],
                            stdin=subprocess.PIPE)
            # Feed a new, bigger stream and kill it partway: the writer has consumed at least
            # all but a pipe's worth of what was written when write() returns.
            limit = rng.randint(4, 48)
            try:
                for i in range(limit):
                    put.proc.stdin.write(incompressible(f"new/{rnd}/{i}", MIB))
                put.proc.stdin.flush()
            except BrokenPipeError:
                self.fail(f"weft put exited early: {put.proc.stderr.read()!r}")
            lines = put.kill()
            try:
                put.proc.stdin.close()
            except BrokenPipeError:
                pass
            self.assertEqual(lines, [], "a stream that never ended must not be acknowledged")
            got = self.weft("cat", "/big.bin").stdout
            self.assertEqual(hashlib.sha256(got).hexdigest(), hashlib.sha256(old).hexdigest())
            self.assert_fsck_clean()
        versions = self.weft_json("log", "/big.bin")
        self.assertEqual(len(versions), 1)


if __name__ == "__main__":
    unittest.main()
