"""Helpers for Weft's integration tests: run the real `weft` binary against a data directory in
a fresh temporary directory, generate datasets, and compare trees byte for byte.

The binary comes from $WEFT_BIN (ctest sets it to the built target); the generator from
$WEFT_SOURCE_DIR/tools (ctest sets it), falling back to this checkout.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("WEFT_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))

import gen_dataset  # noqa: E402  (found through the path set above)

MIB = 1 << 20


def weft_bin():
    path = os.environ.get("WEFT_BIN")
    if not path:
        raise unittest.SkipTest("WEFT_BIN is not set (run through ctest, or export it)")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"WEFT_BIN={path} is not an executable")
    return path


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            piece = f.read(MIB)
            if not piece:
                return h.hexdigest()
            h.update(piece)


def tree_digests(root):
    """{relative path: sha256} of every regular file under root."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out[os.path.relpath(full, root)] = file_digest(full)
    return out


def write_tree(root, files):
    """Writes {relative path: bytes} under root (directories made as needed); returns root."""
    for rel, data in files.items():
        full = os.path.join(root, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    return root


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def incompressible(label, n):
    return hashlib.shake_128(label.encode()).digest(n)


class WeftTestCase(unittest.TestCase):
    """Each test gets its own temporary directory and data directory."""

    def setUp(self):
        self.bin = weft_bin()
        self.tmp = tempfile.mkdtemp(prefix=f"weft-{self.id().split('.')[-1]}-")
        self.data = os.path.join(self.tmp, "data")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def weft(self, *args, input=None, data=None, check=True, timeout=300):
        """Runs weft; returns the CompletedProcess (stdout/stderr as bytes)."""
        cmd = [self.bin, "--data", data or self.data, *args]
        proc = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)
        if check and proc.returncode != 0:
            self.fail(f"{' '.join(cmd)} exited {proc.returncode}: "
                      f"{proc.stderr.decode(errors='replace').strip()}")
        return proc

    def weft_json(self, *args, **kw):
        return json.loads(self.weft("--json", *args, **kw).stdout)

    def assert_one_line_error(self, proc, *needles, code=1):
        """A failure must be exactly one line on stderr, `weft: ...`, and exit `code`."""
        err = proc.stderr.decode(errors="replace")
        self.assertEqual(proc.returncode, code, f"stderr: {err!r}")
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, f"want exactly one stderr line, got {lines!r}")
        self.assertTrue(lines[0].startswith("weft: "), lines[0])
        for needle in needles:
            self.assertIn(needle.lower(), lines[0].lower())
        return lines[0]

    def write_file(self, rel, data):
        full = self.path(rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        return full

    def generate(self, out_rel, kind="images", size=8 * MIB, seed=1):
        out = self.path(out_rel)
        gen_dataset.main(["--kind", kind, "--size", str(size), "--seed", str(seed), "--out", out,
                          "--quiet"])
        return out

    def mutate(self, src, out_rel, fraction=0.1, seed=2):
        out = self.path(out_rel)
        gen_dataset.main(["--mutate", src, "--change-fraction", str(fraction), "--seed",
                          str(seed), "--out", out, "--quiet"])
        return out

    def last_sequence(self, data=None):
        changes = self.weft_json("changes", data=data)
        return changes[-1]["sequence"] if changes else 0

    def assert_fsck_clean(self, data=None):
        proc = self.weft("fsck", data=data, check=False)
        self.assertEqual(proc.returncode, 0,
                         f"fsck: {proc.stdout.decode(errors='replace')}"
                         f"{proc.stderr.decode(errors='replace')}")
