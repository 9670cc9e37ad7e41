"""A full disk: `weft put` of a file larger than a small tmpfs fails with a clear "no space"
error, files committed earlier stay intact, and fsck stays clean."""

import os
import subprocess
import unittest

from weftlib import MIB, WeftTestCase, incompressible

TMPFS_SIZE = "16m"


class FullDiskTest(WeftTestCase):
    def setUp(self):
        super().setUp()
        self.mnt = self.path("tmpfs")
        os.makedirs(self.mnt)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                               self.mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise unittest.SkipTest(f"cannot mount a tmpfs here (needs root and "
                                    f"CAP_SYS_ADMIN): {proc.stderr.decode().strip()}")
        self.addCleanup(subprocess.run, ["umount", "-l", self.mnt])
        self.data = os.path.join(self.mnt, "data")

    def test_put_larger_than_disk(self):
        early = {f"/early/f{i}": incompressible(f"early/{i}", 700_000) for i in range(3)}
        for path, data in early.items():
            self.weft("put", "-", path, input=data)
        too_big = incompressible("too-big", 24 * MIB)
        proc = self.weft("put", "-", "/big.bin", input=too_big, check=False)
        line = self.assert_one_line_error(proc)
        self.assertTrue("space" in line.lower() or "ResourceExhausted" in line, line)
        for path, data in early.items():
            self.assertEqual(self.weft("cat", path).stdout, data)
        self.assert_one_line_error(self.weft("stat", "/big.bin", check=False), "NotFound")
        self.assert_fsck_clean()
        # Space comes back once the failed write's leftovers are collected.
        self.weft("gc", "--keep-noncurrent", "0s")
        self.weft("put", "-", "/after.bin", input=b"small")
        self.assertEqual(self.weft("cat", "/after.bin").stdout, b"small")
        self.assert_fsck_clean()


if __name__ == "__main__":
    unittest.main()
