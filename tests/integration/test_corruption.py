"""Damaged pack files: a flipped byte and a truncation are found by `weft fsck` (exit non-zero,
naming the pack), and reading an affected file fails with a clear Corruption error instead of
returning wrong bytes."""

import os
import re
import unittest

from weftlib import MIB, WeftTestCase, incompressible

PACK_MAGIC = b"WEFTPACK"


class CorruptionTest(WeftTestCase):
    def setUp(self):
        super().setUp()
        self.files = {f"/c/f{i}.bin": incompressible(f"corrupt/{i}", 3 * MIB + i) for i in range(4)}
        for path, data in self.files.items():
            self.weft("put", "-", path, input=data)
        self.assert_fsck_clean()

    def packs(self):
        """Pack data files (recognised by their magic, whatever they are named), largest first."""
        root = os.path.join(self.data, "packs")
        found = []
        for dirpath, _, names in os.walk(root):
            for name in names:
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    if f.read(len(PACK_MAGIC)) == PACK_MAGIC:
                        found.append(full)
        self.assertTrue(found, f"no pack files under {root}: {list(os.walk(root))}")
        return sorted(found, key=os.path.getsize, reverse=True)

    def pack_name(self, pack):
        """Messages name a pack by its 16-hex-digit id, which its file name carries."""
        m = re.search(r"[0-9a-f]{16}", os.path.basename(pack))
        self.assertIsNotNone(m, pack)
        return m.group(0)

    def check_reads(self, want_error):
        """Every file reads back right or fails with one Corruption line; never wrong bytes."""
        failures = 0
        for path, data in self.files.items():
            proc = self.weft("cat", path, check=False)
            if proc.returncode == 0:
                self.assertEqual(proc.stdout, data, f"{path}: wrong bytes returned")
            else:
                self.assert_one_line_error(proc, want_error)
                failures += 1
        self.assertGreater(failures, 0, "no read noticed the damage")

    def check_fsck(self, pack):
        proc = self.weft("fsck", check=False)
        out = (proc.stdout + proc.stderr).decode(errors="replace")
        self.assertNotEqual(proc.returncode, 0, out)
        self.assertIn(self.pack_name(pack), out, "fsck must name the damaged pack")
        self.assertIn("problem", out)

    def test_flipped_byte(self):
        pack = self.packs()[0]
        size = os.path.getsize(pack)
        with open(pack, "r+b") as f:  # the middle of the pack: inside some chunk's data
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x40]))
        self.check_fsck(pack)
        self.check_reads("Corruption")

    def test_truncated_pack(self):
        pack = self.packs()[0]
        os.truncate(pack, os.path.getsize(pack) // 3)
        self.check_fsck(pack)
        self.check_reads("Corruption")


if __name__ == "__main__":
    unittest.main()
