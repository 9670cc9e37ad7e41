"""A full disk: `weft put` (or a write through `weft mount`) of a file larger than a small
tmpfs fails with a clear "no space" error (ENOSPC), files committed earlier stay intact, and
fsck stays clean. A hub filled by PUTs until 507, then killed, opens again (read-only when
something else took the last bytes), never aborts, and takes writes again once space is
freed. A spoke whose cache disk fills goes on serving reads, uncached."""

import errno
import os
import signal
import subprocess
import unittest

from botocore.exceptions import ClientError

from s3lib import ROOT_ACCESS, ROOT_SECRET, S3TestCase
from weftlib import MIB, WeftTestCase, incompressible

TMPFS_SIZE = "16m"


def mount_tmpfs(test, size):
    """A tmpfs of `size` at test.mnt (skips where mounting is not allowed)."""
    test.mnt = test.path("tmpfs")
    os.makedirs(test.mnt)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", test.mnt],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise unittest.SkipTest(f"cannot mount a tmpfs here (needs root and "
                                f"CAP_SYS_ADMIN): {proc.stderr.decode().strip()}")
    test.addCleanup(subprocess.run, ["umount", "-l", test.mnt])


def disk_usage(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.lstat(os.path.join(root, f)).st_blocks * 512 for f in files)
    return total


class FullDiskTest(WeftTestCase):
    def setUp(self):
        super().setUp()
        mount_tmpfs(self, TMPFS_SIZE)
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


class HubFullDiskTest(S3TestCase):
    """`weft serve` on a 64 MiB tmpfs."""

    def setUp(self):
        WeftTestCase.setUp(self)
        mount_tmpfs(self, "64m")
        self.data = os.path.join(self.mnt, "data")
        self.start_hub()

    def fill_with_puts(self, s3, prefix):
        """PUTs 512 KiB objects until the hub answers 507; returns what it acknowledged."""
        acked = {}
        for i in range(1000):
            key, body = f"{prefix}/{i:04d}", incompressible(f"{prefix}/{i}", 512 * 1024)
            try:
                s3.put_object(Bucket="bkt", Key=key, Body=body)
            except ClientError as e:
                self.assertEqual(e.response["ResponseMetadata"]["HTTPStatusCode"], 507)
                self.assertEqual(e.response["Error"]["Code"], "InsufficientStorage")
                self.assertIn("full", e.response["Error"]["Message"])
                return acked
            acked[key] = body
        self.fail("a 64 MiB disk took 500 MiB")

    def restart(self, kill=True):
        if kill:
            self.hub.proc.kill()
            self.hub.proc.wait()
        else:
            self.assertEqual(self.hub.stop(), 0)  # never an abort (134)
        self.assert_fsck_clean()
        self.start_hub()
        return self.boto3()

    def assert_all_read_back(self, s3, acked):
        for key, body in acked.items():
            self.assertEqual(s3.get_object(Bucket="bkt", Key=key)["Body"].read(), body, key)

    def test_filled_killed_reopened_and_freed(self):
        # A fresh hub takes little of a small disk (the metadata log is not preallocated).
        self.assertLess(disk_usage(self.data), 2 * MIB)
        s3 = self.boto3()
        s3.create_bucket(Bucket="bkt")
        acked = {}
        for cycle in range(3):
            added = self.fill_with_puts(s3, f"c{cycle}")
            self.assertGreater(len(added), 20)  # what the last cycle's deletes freed
            acked.update(added)
            s3 = self.restart(kill=cycle > 0)  # the first stop is a SIGTERM on the full disk
            self.assert_all_read_back(s3, acked)
            # Deleting is a metadata write: the reserve lets it through on a full disk. The
            # oldest half goes, whole packs of it, which gc then frees.
            doomed = sorted(acked)[:len(acked) // 2]
            for key in doomed:
                s3.delete_object(Bucket="bkt", Key=key)
                del acked[key]
            self.assertEqual(self.hub.stop(), 0)
            self.weft("gc", "--keep-noncurrent", "0s")
            s3 = self.restart(kill=False)
            s3.put_object(Bucket="bkt", Key=f"after-{cycle}", Body=b"space again")
            acked[f"after-{cycle}"] = b"space again"

        # Something else takes the last bytes: the hub opens read-only, serves what it has,
        # and says why it refuses writes.
        filler = os.path.join(self.mnt, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * MIB)
                    f.flush()
            except OSError:
                pass
        s3 = self.restart(kill=True)
        self.assert_all_read_back(s3, acked)
        with self.assertRaises(ClientError) as cm:
            s3.put_object(Bucket="bkt", Key="refused", Body=b"x")
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 507)
        self.assertIn("is full", cm.exception.response["Error"]["Message"])
        self.assertEqual(self.hub.stop(), 0)
        os.remove(filler)
        self.start_hub()
        s3 = self.boto3()
        s3.put_object(Bucket="bkt", Key="writable", Body=b"again")
        self.assertEqual(s3.get_object(Bucket="bkt", Key="writable")["Body"].read(), b"again")
        self.assert_all_read_back(s3, acked)


class MountFullDiskTest(WeftTestCase):
    """`weft mount --data` on a 16 MiB tmpfs (its staging area is there too)."""

    def setUp(self):
        super().setUp()
        from mountlib import require_fuse
        require_fuse()
        mount_tmpfs(self, TMPFS_SIZE)
        self.data = os.path.join(self.mnt, "data")
        self.mp = self.path("mp")
        self.mount = self.start_mount()

    def start_mount(self):
        from mountlib import Mount
        extra = ["--allow-other"] if os.geteuid() == 0 else []
        mount = Mount(self.bin, self.mp, [], extra, data=self.data)
        self.addCleanup(lambda: mount.proc.poll() is None and mount.stop())
        return mount

    def test_a_file_larger_than_the_disk_fails_with_enospc_and_changes_nothing(self):
        early = {f"early{i}": incompressible(f"early/{i}", 700_000) for i in range(3)}
        for name, data in early.items():
            with open(os.path.join(self.mp, name), "wb") as f:
                f.write(data)
        big = os.path.join(self.mp, "big.bin")
        with self.assertRaises(OSError) as cm:
            with open(big, "wb") as f:
                for i in range(24):
                    f.write(incompressible(f"big/{i}", MIB))
        self.assertEqual(cm.exception.errno, errno.ENOSPC, cm.exception)
        # As on any file system, the file exists from its open(O_CREAT) on, holding at most a
        # prefix of what was written (what the disk took), never other bytes.
        with open(big, "rb") as f:
            kept = f.read()
        intended = b"".join(incompressible(f"big/{i}", MIB) for i in range(24))
        self.assertLess(len(kept), len(intended))
        self.assertEqual(kept, intended[:len(kept)])
        for name, data in early.items():
            with open(os.path.join(self.mp, name), "rb") as f:
                self.assertEqual(f.read(), data)
        self.assertEqual(self.mount.stop(), 0)  # a clean stop, never an abort
        self.assert_fsck_clean()
        # Space comes back once the failed write's leftovers are collected.
        self.weft("gc", "--keep-noncurrent", "0s")
        self.mount = self.start_mount()
        with open(os.path.join(self.mp, "after"), "wb") as f:
            f.write(b"small")
        with open(os.path.join(self.mp, "after"), "rb") as f:
            self.assertEqual(f.read(), b"small")


class SpokeCacheFullDiskTest(S3TestCase):
    """A spoke whose cache disk (a 16 MiB tmpfs) fills while it reads a larger dataset, its
    --cache-size set beyond the disk (a misjudged size, or a disk shared with others)."""

    def setUp(self):
        super().setUp()  # the hub, on the ordinary disk
        mount_tmpfs(self, "16m")
        from test_fabric import SPOKE_ACCESS, SPOKE_SECRET, Spoke
        self.spoke = Spoke(self.bin, self.hub.url, os.path.join(self.mnt, "cache"), "site-a",
                           ["/data"], (ROOT_ACCESS, ROOT_SECRET), extra=["--cache-size", "1G"])
        self.addCleanup(self._stop_quietly, self.spoke)
        self.s3_spoke = self.boto3(SPOKE_ACCESS, SPOKE_SECRET, endpoint=self.spoke.url)

    def test_reads_go_on_and_writes_fail_clearly_when_the_cache_disk_is_full(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="data")
        files = {f"set/f{i:02d}": incompressible(f"set/{i}", 1024 * 1024) for i in range(40)}
        for key, body in files.items():
            s3.put_object(Bucket="data", Key=key, Body=body)
        for _ in range(2):  # the second pass finds the disk full from the start
            for key, body in files.items():
                got = self.s3_spoke.get_object(Bucket="data", Key=key)["Body"].read()
                self.assertEqual(got, body, key)
        # Served, not kept, and counted so an operator sees why the cache does not help.
        import urllib.request
        with urllib.request.urlopen(self.spoke.url + "/_weft/metrics") as r:
            metrics = dict(line.rsplit(" ", 1) for line in r.read().decode().splitlines()
                           if line and not line.startswith("#"))
        self.assertGreater(int(metrics["weft_spoke_uncached_chunks_total"]), 0)
        with self.assertRaises(ClientError) as cm:
            self.s3_spoke.put_object(Bucket="data", Key="new.bin",
                                     Body=incompressible("new", 4 * 1024 * 1024))
        self.assertEqual(cm.exception.response["ResponseMetadata"]["HTTPStatusCode"], 507)
        self.assertIn("full", cm.exception.response["Error"]["Message"])
        with self.assertRaises(ClientError):  # nothing half-written reached the hub
            s3.head_object(Bucket="data", Key="new.bin")
        self.assertEqual(self.spoke.stop(), 0)  # and it stops cleanly


if __name__ == "__main__":
    unittest.main()
