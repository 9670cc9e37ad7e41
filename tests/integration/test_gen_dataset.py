"""tools/gen_dataset.py: the benchmark datasets and their versions are what the figures in
docs/benchmarks.md are measured on, so each named version pattern must make the change it
names (and only it), and the same arguments must give the same bytes."""

import collections
import hashlib
import os
import shutil
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gen_dataset  # noqa: E402


def tree(root):
    """rel path -> (sha256, mtime_ns)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            full = os.path.join(d, n)
            with open(full, "rb") as f:
                out[os.path.relpath(full, root)] = (hashlib.sha256(f.read()).hexdigest(),
                                                    os.stat(full).st_mtime_ns)
    return out


def members(root):
    """The (name, sha256) of every member of every shard under root."""
    out = collections.Counter()
    for rel in tree(root):
        with tarfile.open(os.path.join(root, rel)) as tf:
            for m in tf.getmembers():
                out[(m.name, hashlib.sha256(tf.extractfile(m).read()).hexdigest())] += 1
    return out


class VersionPatternTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-gen-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def version(self, pattern, size="3M"):
        v1, v2 = os.path.join(self.tmp, pattern + "-v1"), os.path.join(self.tmp, pattern + "-v2")
        gen_dataset.main(["--kind", gen_dataset.PATTERNS[pattern], "--size", size, "--seed", "5",
                          "--out", v1, "--quiet"])
        gen_dataset.make_version(pattern, v1, v2, 5)
        return tree(v1), tree(v2), v1, v2

    def assertChangedAreNewer(self, t1, t2):
        for rel, (digest, mtime) in t2.items():
            if rel in t1 and t1[rel][0] == digest:
                self.assertEqual(mtime, t1[rel][1], rel)  # unchanged: as a synced copy keeps it
            else:
                self.assertGreater(mtime, max(m for _, m in t1.values()), rel)

    def test_appended_and_deleted_files(self):
        t1, t2, _, _ = self.version("append-files")
        self.assertTrue(set(t1) < set(t2))
        self.assertEqual({r: t2[r][0] for r in t1}, {r: d for r, (d, _) in t1.items()})
        self.assertEqual(len(t2) - len(t1), max(1, len(t1) // 20))
        self.assertChangedAreNewer(t1, t2)
        t1, t2, _, _ = self.version("delete-files")
        self.assertTrue(set(t2) < set(t1))
        self.assertEqual(len(t1) - len(t2), max(1, len(t1) // 20))
        self.assertChangedAreNewer(t1, t2)

    def test_a_rename_moves_content_between_directories_unchanged(self):
        t1, t2, _, _ = self.version("rename")
        self.assertEqual(sorted(d for d, _ in t1.values()), sorted(d for d, _ in t2.values()))
        moved = [r for r in t2 if r not in t1]
        self.assertEqual(len(moved), len(t1) * 3 // 10)
        for rel in moved:
            self.assertNotEqual(os.path.dirname(rel), "images/class_0000")
        self.assertChangedAreNewer(t1, t2)

    def test_lines_appended_or_deleted_keep_the_rest(self):
        _, t2, v1, v2 = self.version("append-lines")
        for rel in t2:
            old, new = (open(os.path.join(r, rel), "rb").read() for r in (v1, v2))
            self.assertTrue(new.startswith(old) and len(new) > len(old), rel)
        _, t2, v1, v2 = self.version("delete-lines")
        for rel in t2:
            old = open(os.path.join(v1, rel), "rb").read().splitlines()
            new = open(os.path.join(v2, rel), "rb").read().splitlines()
            self.assertEqual(len(old) - len(new), max(len(old) // 100, 1), rel)
            it = iter(old)
            self.assertTrue(all(line in it for line in new), rel)  # a subsequence

    def test_shards_appended_to_or_resharded_keep_their_samples(self):
        t1, t2, v1, v2 = self.version("append-samples", "6M")
        changed = [r for r in t2 if t2[r][0] != t1[r][0]]
        self.assertEqual(len(changed), (len(t1) + 3) // 4)
        for rel in changed:
            old, new = (open(os.path.join(r, rel), "rb").read() for r in (v1, v2))
            with tarfile.open(os.path.join(v1, rel)) as tf:  # then the archive's end padding
                end = max(m.offset_data + m.size for m in tf.getmembers())
            self.assertEqual(new[:end], old[:end], rel)
            self.assertGreater(len(new), len(old), rel)
        t1, t2, v1, v2 = self.version("reshard", "6M")
        self.assertEqual(members(v1), members(v2))
        self.assertFalse(set(t1) & set(t2))
        self.assertLess(len(t2), len(t1))

    def test_a_checkpoint_update_changes_about_one_value_in_a_hundred(self):
        t1, t2, v1, v2 = self.version("checkpoint")
        for rel in t1:
            old, new = (open(os.path.join(r, rel), "rb").read() for r in (v1, v2))
            self.assertEqual(len(old), len(new))
            floats = len(old) // 4
            differing = sum(old[i:i + 4] != new[i:i + 4] for i in range(0, len(old), 4))
            self.assertGreater(differing, floats // 200, rel)
            self.assertLessEqual(differing, floats // 100 + 1, rel)
        self.assertChangedAreNewer(t1, t2)

    def test_the_same_arguments_give_the_same_bytes_whatever_ran_before(self):
        a, b = os.path.join(self.tmp, "a"), os.path.join(self.tmp, "b")
        gen_dataset.WORDS = gen_dataset.PHRASES = None  # as in a fresh process
        gen_dataset.main(["--kind", "jsonl", "--size", "1M", "--seed", "3", "--out", a,
                          "--quiet"])
        gen_dataset.main(["--kind", "shards", "--size", "1M", "--seed", "4", "--out",
                          os.path.join(self.tmp, "other"), "--quiet"])
        gen_dataset.main(["--kind", "jsonl", "--size", "1M", "--seed", "3", "--out", b,
                          "--quiet"])
        self.assertEqual({r: d for r, (d, _) in tree(a).items()},
                         {r: d for r, (d, _) in tree(b).items()})


if __name__ == "__main__":
    unittest.main()
