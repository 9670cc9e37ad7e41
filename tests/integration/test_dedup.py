"""Deduplication across dataset versions: storing a 10 %-changed v2 over v1 grows the stored
bytes by at most 15 %, and `weft du` says so."""

import os
import unittest

from weftlib import MIB, WeftTestCase, tree_digests

SIZE = int(os.environ.get("WEFT_DEDUP_BYTES", str(80 * MIB)))


class DedupTest(WeftTestCase):
    def check_kind(self, kind):
        v1 = self.generate(f"{kind}-v1", kind=kind, size=SIZE)
        v2 = self.mutate(v1, f"{kind}-v2", fraction=0.1)
        self.weft("put", v1, "/ds")
        after_v1 = self.weft_json("du")
        self.weft("put", v2 + "/.", "/ds")
        after_v2 = self.weft_json("du")
        growth = after_v2["stored_bytes"] / after_v1["stored_bytes"] - 1
        self.assertLessEqual(growth, 0.15, f"{kind}: stored {after_v1} -> {after_v2}")
        self.assertGreater(after_v2["referenced_bytes"], after_v1["referenced_bytes"])
        self.assertGreater(after_v2["dedup_ratio"], 1.5)
        # v2's files read back as v2 (deleted ones are kept: put never deletes).
        self.weft("get", "/ds", self.path(f"{kind}-out"))
        got = tree_digests(self.path(f"{kind}-out"))
        for rel, digest in tree_digests(v2).items():
            self.assertEqual(got.get(rel), digest, rel)
        self.assert_fsck_clean()

    def test_images(self):
        self.check_kind("images")

    def test_shards(self):
        self.check_kind("shards")


if __name__ == "__main__":
    unittest.main()
