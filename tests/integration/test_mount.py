"""`weft mount` through the kernel's FUSE: POSIX behaviour on a local volume (permissions,
rename over a file, unlink of an open file, sparse writes, truncate, readdir while the
directory changes, errors), snapshots, clean unmount, and the two networked forms: an
embedded spoke of a hub (--hub) and a running hub (--server)."""

import errno
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import threading
import time
import unittest

from mountlib import Mount, is_mounted, require_fuse
from s3lib import ROOT_ACCESS, ROOT_SECRET, S3TestCase
from weftlib import MIB, WeftTestCase, incompressible

NOBODY = 65534


def as_nobody(*argv):
    """Runs argv as uid/gid 65534 (not root), so the kernel checks permissions."""
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                           "--clear-groups", *argv],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


class LocalMountTestCase(WeftTestCase):
    """Each test gets `weft mount --data` of its own data directory at self.mp."""

    def setUp(self):
        super().setUp()
        require_fuse()
        self.mp = self.path("mnt")
        # Other users reach the mount only with allow_other, which root may always set.
        extra = ["--allow-other"] if os.geteuid() == 0 else []
        self.mount = Mount(self.bin, self.mp, [], extra, data=self.data)
        self.addCleanup(self.unmount)

    def unmount(self):
        if self.mount.proc.poll() is None:
            self.assertEqual(self.mount.stop(), 0)

    def m(self, *parts):
        return os.path.join(self.mp, *parts)

    def assert_errno(self, code, fn, *args):
        with self.assertRaises(OSError) as caught:
            fn(*args)
        self.assertEqual(caught.exception.errno, code,
                         f"{fn.__name__}{args}: {caught.exception}")


class PosixTest(LocalMountTestCase):
    def test_files_round_trip_in_one_mib_pieces_and_survive_a_remount(self):
        data = incompressible("big", 24 * MIB + 12345)
        with open(self.m("big.bin"), "wb") as f:
            for i in range(0, len(data), MIB):
                f.write(data[i:i + MIB])
        self.assertEqual(os.stat(self.m("big.bin")).st_size, len(data))
        self.assertEqual(read(self.m("big.bin")), data)
        os.makedirs(self.m("a", "b", "c"))
        write(self.m("a", "b", "c", "small"), b"hello")
        self.unmount()
        self.assertFalse(is_mounted(self.mp))
        # The engine has every byte: the CLI reads what the mount wrote.
        self.assertEqual(self.weft("cat", "/big.bin").stdout, data)
        self.assertEqual(self.weft("cat", "/a/b/c/small").stdout, b"hello")
        self.assert_fsck_clean()

    def test_rename_over_an_existing_file_is_atomic_for_readers(self):
        old, new = incompressible("old", 3 * MIB), incompressible("new", 3 * MIB + 7)
        write(self.m("target"), old)
        write(self.m("incoming"), new)
        seen = []
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                try:
                    seen.append(hashlib.sha256(read(self.m("target"))).digest())
                except FileNotFoundError:
                    seen.append(None)

        t = threading.Thread(target=reader)
        t.start()
        time.sleep(0.05)
        os.rename(self.m("incoming"), self.m("target"))
        time.sleep(0.05)
        stop.set()
        t.join()
        self.assertEqual(read(self.m("target")), new)
        self.assertFalse(os.path.exists(self.m("incoming")))
        allowed = {hashlib.sha256(old).digest(), hashlib.sha256(new).digest()}
        self.assertTrue(seen)
        self.assertTrue(set(seen) <= allowed, "a reader saw neither the old nor the new file")
        # Directories: over an empty one works, over a non-empty one does not.
        os.makedirs(self.m("d1", "x"))
        os.mkdir(self.m("d2"))
        os.rename(self.m("d1"), self.m("d2"))
        self.assertTrue(os.path.isdir(self.m("d2", "x")))
        os.makedirs(self.m("d3", "y"))
        self.assert_errno(errno.ENOTEMPTY, os.rename, self.m("d3"), self.m("d2"))
        self.assert_errno(errno.EISDIR, os.rename, self.m("target"), self.m("d2"))

    def test_an_unlinked_file_stays_readable_while_open_and_its_writes_vanish(self):
        data = incompressible("open", 2 * MIB)
        write(self.m("f"), data)
        with open(self.m("f"), "rb") as f:
            first = f.read(MIB)
            os.unlink(self.m("f"))
            self.assertFalse(os.path.exists(self.m("f")))
            self.assertEqual(os.fstat(f.fileno()).st_size, len(data))  # not ESTALE
            self.assertEqual(first + f.read(), data)
        # A read-write handle keeps the file whole after the unlink: fstat, read, write, read.
        write(self.m("rw"), b"hello world")
        with open(self.m("rw"), "r+b", buffering=0) as f:
            os.unlink(self.m("rw"))
            self.assertEqual(os.fstat(f.fileno()).st_size, 11)
            self.assertEqual(f.read(), b"hello world")
            f.seek(0)
            f.write(b"HELLO")
            f.seek(0)
            self.assertEqual(f.read(), b"HELLO world")
            self.assertEqual(os.fstat(f.fileno()).st_size, 11)
        self.assertFalse(os.path.exists(self.m("rw")))
        # A write still open on a removed file does not bring it back at close.
        w = open(self.m("g"), "wb")
        w.write(b"first")
        os.unlink(self.m("g"))
        w.write(b" and more")
        w.close()
        self.assertFalse(os.path.exists(self.m("g")))
        self.assertNotIn("g", os.listdir(self.mp))

    def test_sparse_writes_and_truncate(self):
        with open(self.m("sparse"), "wb") as f:
            f.seek(5 * MIB)
            f.write(b"tail")
            f.seek(100)
            f.write(b"head")
        data = read(self.m("sparse"))
        self.assertEqual(len(data), 5 * MIB + 4)
        self.assertEqual(data[100:104], b"head")
        self.assertEqual(data[5 * MIB:], b"tail")
        self.assertEqual(data[:100] + data[104:5 * MIB], bytes(5 * MIB - 4))
        # Overwrite in the middle of an existing file keeps the rest.
        with open(self.m("sparse"), "r+b") as f:
            f.seek(1000)
            f.write(b"middle")
        data2 = read(self.m("sparse"))
        self.assertEqual(data2[1000:1006], b"middle")
        self.assertEqual(data2[:1000] + data2[1006:], data[:1000] + data[1006:])
        # truncate(2) without a descriptor: shrink, then extend with zeros.
        os.truncate(self.m("sparse"), 102)
        self.assertEqual(read(self.m("sparse")), bytes(100) + b"he")
        os.truncate(self.m("sparse"), 110)
        self.assertEqual(read(self.m("sparse")), bytes(100) + b"he" + bytes(8))
        # ftruncate on an open descriptor, then append; the size shows before close.
        with open(self.m("sparse"), "r+b") as f:
            f.truncate(3)
            self.assertEqual(os.fstat(f.fileno()).st_size, 3)
            self.assertEqual(os.stat(self.m("sparse")).st_size, 3)
            f.seek(0, os.SEEK_END)
            f.write(b"XY")
        self.assertEqual(read(self.m("sparse")), bytes(3) + b"XY")
        # O_TRUNC and O_APPEND.
        write(self.m("sparse"), b"new")
        with open(self.m("sparse"), "ab") as f:
            f.write(b"+1")
        self.assertEqual(read(self.m("sparse")), b"new+1")

    def test_holes_cost_nothing_to_store_or_read(self):
        """Extending by a terabyte is a manifest of zero chunks: fast, nothing stored."""
        write(self.m("huge"), b"head")
        tib = 1 << 40
        start = time.monotonic()
        os.truncate(self.m("huge"), tib)
        self.assertLess(time.monotonic() - start, 60)  # was ~5 s per GiB: hours
        self.assertEqual(os.stat(self.m("huge")).st_size, tib)
        with open(self.m("huge"), "rb") as f:
            self.assertEqual(f.read(8), b"head" + bytes(4))
            f.seek(tib // 2)
            self.assertEqual(f.read(MIB), bytes(MIB))
            f.seek(tib - 3)
            self.assertEqual(f.read(), bytes(3))
        # Writing into the hole and extending again keep the holes holes.
        with open(self.m("huge"), "r+b") as f:
            f.seek(tib // 2)
            f.write(b"middle")
        os.truncate(self.m("huge"), 2 * tib)
        with open(self.m("huge"), "rb") as f:
            f.seek(tib // 2 - 2)
            self.assertEqual(f.read(10), bytes(2) + b"middle" + bytes(2))
        packs = os.path.join(self.data, "packs")
        stored = sum(os.path.getsize(os.path.join(packs, n)) for n in os.listdir(packs))
        self.assertLess(stored, 64 * MIB)
        self.unmount()
        self.assert_fsck_clean()
        out = self.weft("cat", "/huge", "--offset", str(tib // 2), "--length", "6").stdout
        self.assertEqual(out, b"middle")

    def slow_truncate(self):
        """A child extending a 384 MiB file of real data by one byte (the daemon stages and
        re-chunks all of it: about a second), started a quarter of the way into the time
        the same truncate took uninterrupted, which is returned with it."""
        size = 384 * MIB
        write(self.m("big"), incompressible("big", size))
        code = "import os, sys; os.truncate(sys.argv[1], int(sys.argv[2]))"
        start = time.monotonic()
        subprocess.run(["/usr/bin/python3", "-c", code, self.m("big"), str(size + 1)], check=True)
        whole = time.monotonic() - start
        child = subprocess.Popen(["/usr/bin/python3", "-c", code, self.m("big"), str(size + 2)],
                                 stderr=subprocess.DEVNULL)  # EINTR, when it is let go
        time.sleep(whole / 4)
        return child, whole

    def test_a_killed_caller_is_let_go_at_once(self):
        child, whole = self.slow_truncate()
        start = time.monotonic()
        child.kill()
        child.wait(60)
        gone = time.monotonic() - start
        print(f"\nuninterrupted: {whole:.2f} s; killed caller gone after {gone:.3f} s")
        # Uninterrupted, it would run about three quarters of `whole` more.
        self.assertLess(gone, whole / 4)
        self.assertIn(os.stat(self.m("big")).st_size, (384 * MIB + 1, 384 * MIB + 2))

    def test_sigterm_stops_the_daemon_during_a_long_operation(self):
        child, whole = self.slow_truncate()
        start = time.monotonic()
        self.mount.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.mount.proc.wait(60), 0)
        stopped = time.monotonic() - start
        print(f"\nuninterrupted: {whole:.2f} s; daemon stopped after {stopped:.3f} s")
        self.assertLess(stopped, whole / 4)
        child.wait(60)
        self.assertFalse(is_mounted(self.mp))
        self.assert_fsck_clean()

    def test_new_files_commit_right_whatever_the_write_order(self):
        # In order from 0 (the streamed commit), then the same with a seek back, a rename and
        # a chmod while open (each falls back to committing the staging file).
        data = incompressible("stream", 5 * MIB + 17)
        with open(self.m("in-order"), "wb") as f:
            for i in range(0, len(data), 100_000):
                f.write(data[i:i + 100_000])
        self.assertEqual(read(self.m("in-order")), data)
        with open(self.m("seek-back"), "wb") as f:
            f.write(data)
            f.seek(10)
            f.write(b"0123456789")
        self.assertEqual(read(self.m("seek-back")), data[:10] + b"0123456789" + data[20:])
        with open(self.m("renamed-while-open"), "wb") as f:
            f.write(data[:MIB])
            os.rename(self.m("renamed-while-open"), self.m("renamed"))
            f.write(data[MIB:])
        self.assertFalse(os.path.exists(self.m("renamed-while-open")))
        self.assertEqual(read(self.m("renamed")), data)
        with open(self.m("chmod-while-open"), "wb") as f:
            f.write(data[:MIB])
            os.chmod(self.m("chmod-while-open"), 0o600)
            f.write(data[MIB:])
        self.assertEqual(read(self.m("chmod-while-open")), data)
        self.assertEqual(os.stat(self.m("chmod-while-open")).st_mode & 0o777, 0o600)
        # fsync commits mid-way; what follows commits at close.
        with open(self.m("fsync-mid"), "wb") as f:
            f.write(data[:MIB])
            f.flush()
            os.fsync(f.fileno())
            f.write(data[MIB:])
        self.assertEqual(read(self.m("fsync-mid")), data)
        self.unmount()
        for name in ("in-order", "renamed", "chmod-while-open", "fsync-mid"):
            self.assertEqual(self.weft("cat", "/" + name).stdout, data, name)
        self.assert_fsck_clean()

    def test_attributes_symlinks_and_fsync(self):
        write(self.m("f"), b"abc")
        os.chmod(self.m("f"), 0o640)
        os.utime(self.m("f"), ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        st = os.stat(self.m("f"))
        self.assertEqual(st.st_mode & 0o7777, 0o640)
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_000_000_000)
        self.assertEqual(st.st_size, 3)
        os.chown(self.m("f"), 1234, 5678)
        st = os.stat(self.m("f"))
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        # A new version keeps the file's mode.
        write(self.m("f"), b"abcd")
        self.assertEqual(os.stat(self.m("f")).st_mode & 0o7777, 0o640)
        os.symlink("f", self.m("link"))
        self.assertEqual(os.readlink(self.m("link")), "f")
        self.assertEqual(read(self.m("link")), b"abcd")
        self.assertTrue(os.path.islink(self.m("link")))
        # fsync makes a version while the file stays open: a snapshot taken then has it.
        with open(self.m("doc"), "wb") as f:
            f.write(b"v1")
            f.flush()
            os.fsync(f.fileno())
            os.mkdir(self.m(".weft", "snapshots", "after-fsync"))
            f.write(b" then v2")
        self.assertEqual(read(self.m(".weft", "snapshots", "after-fsync", "doc")), b"v1")
        self.assertEqual(read(self.m("doc")), b"v1 then v2")
        sv = os.statvfs(self.mp)
        self.assertGreater(sv.f_blocks, 0)
        self.assertEqual(sv.f_namemax, 255)

    def test_fifos_sockets_and_device_nodes(self):
        os.mkfifo(self.m("fifo"), 0o640)
        st = os.stat(self.m("fifo"))
        self.assertTrue(stat.S_ISFIFO(st.st_mode))
        self.assertEqual(st.st_mode & 0o7777, 0o640)
        self.assert_errno(errno.EEXIST, os.mkfifo, self.m("fifo"))
        # The kernel makes a pipe of it: what one process writes, another reads.
        reader = subprocess.Popen(["cat", self.m("fifo")], stdout=subprocess.PIPE)
        with open(self.m("fifo"), "wb") as w:
            w.write(b"through the pipe\n")
        self.assertEqual(reader.communicate(timeout=30)[0], b"through the pipe\n")
        # A socket bound at a path in the mount.
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(server.close)
        server.bind(self.m("sock"))
        self.assertTrue(stat.S_ISSOCK(os.stat(self.m("sock")).st_mode))
        entries = {e.name: e for e in os.scandir(self.mp)}
        self.assertTrue(stat.S_ISFIFO(entries["fifo"].stat(follow_symlinks=False).st_mode))
        self.assertTrue(stat.S_ISSOCK(entries["sock"].stat(follow_symlinks=False).st_mode))
        if os.geteuid() == 0:
            # Device nodes keep their number; the mount is nodev, so they open nothing.
            os.mknod(self.m("null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            st = os.stat(self.m("null"))
            self.assertTrue(stat.S_ISCHR(st.st_mode))
            self.assertEqual((os.major(st.st_rdev), os.minor(st.st_rdev)), (1, 3))
            self.assert_errno(errno.EACCES, open, self.m("null"), "rb")
            os.mknod(self.m("blk"), 0o600 | stat.S_IFBLK, os.makedev(7, 0))
            self.assertTrue(stat.S_ISBLK(os.stat(self.m("blk")).st_mode))
        else:
            self.assert_errno(errno.EPERM, os.mknod, self.m("null"),
                              0o666 | stat.S_IFCHR, os.makedev(1, 3))
        # Renamed, replaced and removed like other names; a rename onto a FIFO is ENOTDIR for
        # a directory and replaces it for a file.
        os.rename(self.m("fifo"), self.m("pipe"))
        self.assertTrue(stat.S_ISFIFO(os.stat(self.m("pipe")).st_mode))
        os.mkdir(self.m("d"))
        self.assert_errno(errno.ENOTDIR, os.rename, self.m("d"), self.m("pipe"))
        write(self.m("f"), b"x")
        os.rename(self.m("f"), self.m("pipe"))
        self.assertEqual(read(self.m("pipe")), b"x")
        os.unlink(self.m("sock"))
        self.assertNotIn("sock", os.listdir(self.mp))
        # They survive a remount.
        os.mkfifo(self.m("kept"))
        self.assertEqual(self.mount.stop(), 0)
        self.mount = Mount(self.bin, self.mp, [], [], data=self.data)
        self.assertTrue(stat.S_ISFIFO(os.stat(self.m("kept")).st_mode))

    def test_hard_links_share_one_file(self):
        write(self.m("f"), b"one")
        os.mkdir(self.m("d"))
        before = os.stat(self.m("f"))
        time.sleep(0.01)
        os.link(self.m("f"), self.m("d", "g"))
        f, g = os.stat(self.m("f")), os.stat(self.m("d", "g"))
        self.assertEqual(f.st_ino, g.st_ino)
        self.assertEqual((f.st_nlink, g.st_nlink), (2, 2))
        self.assertGreater(f.st_ctime_ns, before.st_ctime_ns)
        # A write through one name shows through the other, and so does a chmod.
        write(self.m("d", "g"), b"two")
        self.assertEqual(read(self.m("f")), b"two")
        os.chmod(self.m("f"), 0o600)
        self.assertEqual(os.stat(self.m("d", "g")).st_mode & 0o777, 0o600)
        os.link(self.m("f"), self.m("h"))
        self.assertEqual(os.stat(self.m("d", "g")).st_nlink, 3)
        # Errors, as link(2) and rename(2) say.
        self.assert_errno(errno.EEXIST, os.link, self.m("f"), self.m("h"))
        self.assert_errno(errno.EPERM, os.link, self.m("d"), self.m("dd"))
        self.assert_errno(errno.ENOENT, os.link, self.m("missing"), self.m("x"))
        os.rename(self.m("f"), self.m("h"))  # two names of one file: nothing happens
        self.assertEqual(os.stat(self.m("f")).st_nlink, 3)
        # Removing a name keeps the file for the others, and the count follows.
        os.unlink(self.m("f"))
        self.assertEqual(os.stat(self.m("h")).st_nlink, 2)
        self.assertEqual(read(self.m("d", "g")), b"two")
        # Renaming a file over one name of another takes that name away.
        write(self.m("other"), b"three")
        os.rename(self.m("other"), self.m("h"))
        self.assertEqual(os.stat(self.m("d", "g")).st_nlink, 1)
        self.assertEqual(read(self.m("h")), b"three")
        # A rename between two names of one file does nothing, even to a writer open on one.
        os.link(self.m("h"), self.m("h2"))
        fd = os.open(self.m("h2"), os.O_WRONLY)
        os.rename(self.m("h"), self.m("h2"))
        os.write(fd, b"THREE")
        os.close(fd)
        self.assertEqual(read(self.m("h")), b"THREE")
        # Bytes written through a name removed meanwhile cannot reach the file's other names
        # from the mount: the close says so, and the other names keep what they had.
        self.assertEqual(os.stat(self.m("h2")).st_nlink, 2)
        os.link(self.m("h"), self.m("k"))
        fd = os.open(self.m("k"), os.O_WRONLY)
        os.unlink(self.m("k"))
        os.write(fd, b"lost")
        self.assert_errno(errno.EIO, os.close, fd)
        self.assertEqual(read(self.m("h")), b"THREE")
        os.unlink(self.m("h2"))
        # Kept across a remount, and fsck counts the names.
        os.link(self.m("d", "g"), self.m("g2"))
        self.assertEqual(self.mount.stop(), 0)
        fsck = subprocess.run([self.bin, "--data", self.data, "fsck"], capture_output=True,
                              text=True)
        self.assertEqual(fsck.returncode, 0, fsck.stdout + fsck.stderr)
        self.mount = Mount(self.bin, self.mp, [], [], data=self.data)
        self.assertEqual(os.stat(self.m("g2")).st_nlink, 2)
        self.assertEqual(os.stat(self.m("g2")).st_ino, os.stat(self.m("d", "g")).st_ino)
        self.assertEqual(read(self.m("g2")), b"two")

    def test_directory_times_and_link_counts(self):
        os.mkdir(self.m("d"))
        self.assertEqual(os.stat(self.m("d")).st_nlink, 2)
        before = os.stat(self.m("d"))
        time.sleep(0.01)
        write(self.m("d", "f"), b"x")
        after = os.stat(self.m("d"))
        self.assertGreater(after.st_mtime_ns, before.st_mtime_ns)
        self.assertGreater(after.st_ctime_ns, before.st_ctime_ns)
        self.assertEqual(after.st_nlink, 2)
        for sub in ("a", "b", "c"):
            os.mkdir(self.m("d", sub))
        self.assertEqual(os.stat(self.m("d")).st_nlink, 5)
        root = os.stat(self.mp).st_nlink
        os.rename(self.m("d", "c"), self.m("c"))
        self.assertEqual(os.stat(self.m("d")).st_nlink, 4)
        self.assertEqual(os.stat(self.mp).st_nlink, root + 1)
        before = os.stat(self.m("d"))
        time.sleep(0.01)
        os.rmdir(self.m("d", "b"))
        after = os.stat(self.m("d"))
        self.assertEqual(after.st_nlink, 3)
        self.assertGreater(after.st_mtime_ns, before.st_mtime_ns)
        time.sleep(0.01)
        os.unlink(self.m("d", "f"))
        self.assertGreater(os.stat(self.m("d")).st_mtime_ns, after.st_mtime_ns)
        # `find` walks the tree whole (it counts subdirectories from the link count).
        found = subprocess.run(["find", self.mp, "-path", "*/.weft", "-prune", "-o", "-print"],
                               capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual(sorted(os.path.relpath(p, self.mp) for p in found),
                         [".", "c", "d", "d/a"])

    def test_access_times_are_kept_when_set(self):
        write(self.m("f"), b"abc")
        st = os.stat(self.m("f"))
        # Set when the file was made (open with O_CREAT); the write at close changed the mtime.
        self.assertLessEqual(st.st_atime_ns, st.st_mtime_ns)
        os.utime(self.m("f"), ns=(1_500_000_000_000_000_000, 1_600_000_000_000_000_000))
        st = os.stat(self.m("f"))
        self.assertEqual(st.st_atime_ns, 1_500_000_000_000_000_000)
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_000_000_000)
        read(self.m("f"))
        self.assertEqual(os.stat(self.m("f")).st_atime_ns, 1_500_000_000_000_000_000)
        # touch -m keeps the atime; touch -a keeps the mtime.
        subprocess.run(["touch", "-m", "-d", "2001-01-01 00:00:00Z", self.m("f")], check=True)
        st = os.stat(self.m("f"))
        self.assertEqual(st.st_atime_ns, 1_500_000_000_000_000_000)
        self.assertEqual(st.st_mtime_ns, 978_307_200_000_000_000)
        subprocess.run(["touch", "-a", "-d", "2002-01-01 00:00:00Z", self.m("f")], check=True)
        st = os.stat(self.m("f"))
        self.assertEqual(st.st_atime_ns, 1_009_843_200_000_000_000)
        self.assertEqual(st.st_mtime_ns, 978_307_200_000_000_000)

    def test_errors(self):
        self.assert_errno(errno.ENOENT, open, self.m("missing"), "rb")
        self.assert_errno(errno.ENOENT, os.stat, self.m("no", "such"))
        os.mkdir(self.m("d"))
        self.assert_errno(errno.EEXIST, os.mkdir, self.m("d"))
        write(self.m("d", "f"), b"x")
        self.assert_errno(errno.EEXIST, os.open, self.m("d", "f"), os.O_CREAT | os.O_EXCL |
                          os.O_WRONLY)
        self.assert_errno(errno.ENOTEMPTY, os.rmdir, self.m("d"))
        self.assert_errno(errno.ENOTDIR, os.listdir, self.m("d", "f"))
        self.assert_errno(errno.ENOTDIR, os.mkdir, self.m("d", "f", "sub"))
        self.assert_errno(errno.EISDIR, open, self.m("d"), "wb")
        self.assert_errno(errno.ENAMETOOLONG, open, self.m("x" * 256), "wb")
        self.assertEqual(sorted(os.listdir(self.m("d"))), ["f"])
        # Name limits are per segment (255) and per call (PATH_MAX), not on the whole path in
        # the volume: a tree 20 directories of 250 bytes deep (5 KB) works through relative
        # paths.
        fd = os.open(self.mp, os.O_RDONLY)
        try:
            for level in range(20):
                name = f"{level:02d}" + "d" * 248
                os.mkdir(name, dir_fd=fd)
                sub = os.open(name, os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = sub
            out = os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
            os.write(out, b"deep")
            os.close(out)
            inside = os.open("leaf", os.O_RDONLY, dir_fd=fd)
            self.assertEqual(os.read(inside, 10), b"deep")
            os.close(inside)
            self.assert_errno(errno.ENAMETOOLONG, lambda: os.mkdir("x" * 256, dir_fd=fd))
        finally:
            os.close(fd)
        # Past the largest file (16 TiB): EFBIG, for truncate and for a write, and nothing
        # changes.
        self.assert_errno(errno.EFBIG, os.truncate, self.m("d", "f"), 1 << 50)
        fd = os.open(self.m("d", "f"), os.O_WRONLY)
        try:
            self.assert_errno(errno.EFBIG, os.pwrite, fd, b"z", 1 << 50)
        finally:
            os.close(fd)
        self.assertEqual(read(self.m("d", "f")), b"x")

    def test_permissions_are_checked_for_other_users(self):
        if os.geteuid() != 0:
            self.skipTest("acting as another user (setpriv) needs root")
        os.chmod(self.tmp, 0o755)  # let the other user reach the mount point
        os.mkdir(self.m("private"), 0o700)
        os.mkdir(self.m("shared"), 0o755)
        write(self.m("shared", "readme"), b"read me")
        os.chmod(self.m("shared", "readme"), 0o644)
        os.mkdir(self.m("open"))
        os.chmod(self.m("open"), 0o777)  # mkdir's mode passes through the umask

        r = as_nobody("cat", self.m("shared", "readme"))
        self.assertEqual((r.returncode, r.stdout), (0, b"read me"), r.stderr)
        r = as_nobody("sh", "-c", f"echo x >> {self.m('shared', 'readme')}")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"Permission denied", r.stderr)
        r = as_nobody("touch", self.m("shared", "new"))
        self.assertIn(b"Permission denied", r.stderr)
        r = as_nobody("ls", self.m("private"))
        self.assertIn(b"Permission denied", r.stderr)
        r = as_nobody("chown", "0", self.m("shared", "readme"))
        self.assertIn(b"Operation not permitted", r.stderr)
        r = as_nobody("sh", "-c", f"echo mine > {self.m('open', 'mine')}")
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.stat(self.m("open", "mine"))
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))
        self.assertEqual(read(self.m("open", "mine")), b"mine\n")
        self.assertEqual(read(self.m("shared", "readme")), b"read me")
        self.assertFalse(os.path.exists(self.m("shared", "new")))

    def test_readdir_while_the_directory_changes(self):
        d = self.m("many")
        os.mkdir(d)
        names = [f"f{i:05d}" for i in range(2500)]
        for n in names:
            os.close(os.open(os.path.join(d, n), os.O_CREAT | os.O_WRONLY, 0o644))
        removed, added = set(names[1::7]), {f"g{i:05d}" for i in range(300)}
        seen = []
        with os.scandir(d) as it:
            for i, entry in enumerate(it):
                seen.append(entry.name)
                if i == 400:  # change it halfway through the listing
                    for n in removed:
                        os.unlink(os.path.join(d, n))
                    for n in added:
                        write(os.path.join(d, n), b"")
        self.assertEqual(len(seen), len(set(seen)), "a name was listed twice")
        untouched = set(names) - removed
        self.assertTrue(untouched <= set(seen), "a name present throughout was not listed")
        self.assertTrue(set(seen) <= set(names) | added)
        # A fresh listing is exact.
        self.assertEqual(set(os.listdir(d)), untouched | added)

    def test_snapshots_are_read_only_trees_of_old_bytes(self):
        os.mkdir(self.m("data"))
        write(self.m("data", "a"), b"version 1")
        os.mkdir(self.m(".weft", "snapshots", "s1"))
        write(self.m("data", "a"), b"version 2")
        write(self.m("data", "b"), b"new file")
        snap = self.m(".weft", "snapshots", "s1")
        self.assertEqual(os.listdir(self.m(".weft", "snapshots")), ["s1"])
        self.assertEqual(read(os.path.join(snap, "data", "a")), b"version 1")
        self.assertEqual(os.listdir(os.path.join(snap, "data")), ["a"])
        self.assertEqual(read(self.m("data", "a")), b"version 2")
        self.assert_errno(errno.EROFS, open, os.path.join(snap, "data", "a"), "wb")
        self.assert_errno(errno.EROFS, os.unlink, os.path.join(snap, "data", "a"))
        self.assert_errno(errno.EROFS, os.mkdir, os.path.join(snap, "data", "x"))
        self.assert_errno(errno.EROFS, os.rename, self.m("data", "b"),
                          os.path.join(snap, "data", "b"))
        self.assert_errno(errno.EEXIST, os.mkdir, snap)
        # What Weft knows of a path, as read-only extended attributes.
        self.assertEqual(os.getxattr(snap, "user.weft.snapshot_path"), b"/")
        self.assertEqual(os.getxattr(self.m("data", "a"), "user.weft.etag"),
                         hashlib.md5(b"version 2").hexdigest().encode())
        self.assertEqual(os.getxattr(os.path.join(snap, "data", "a"), "user.weft.etag"),
                         hashlib.md5(b"version 1").hexdigest().encode())
        self.assertNotEqual(os.getxattr(self.m("data", "a"), "user.weft.version_id"),
                            os.getxattr(os.path.join(snap, "data", "a"), "user.weft.version_id"))
        self.assertIn("user.weft.etag", os.listxattr(self.m("data", "a")))
        self.assert_errno(errno.ENODATA, os.getxattr, self.m("data", "a"), "user.other")
        self.assert_errno(errno.ENOTSUP, os.setxattr, self.m("data", "a"), "user.x", b"1")
        os.rmdir(snap)
        self.assertEqual(os.listdir(self.m(".weft", "snapshots")), [])

    def test_sigterm_unmounts_cleanly(self):
        write(self.m("f"), b"kept")
        self.mount.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.mount.proc.wait(30), 0)
        self.assertFalse(is_mounted(self.mp))
        self.assertEqual(self.weft("cat", "/f").stdout, b"kept")


class ReadOnlyMountTest(WeftTestCase):
    def put_and_mount(self, files, dest):
        """Puts `files` (relative path -> bytes) under `dest`, then mounts the volume
        read-only; returns the mount."""
        require_fuse()
        for rel, body in files.items():
            self.write_file(os.path.join("src", rel), body)
        self.weft("put", self.path("src"), dest)
        mount = Mount(self.bin, self.path("ro"), [], ["--read-only"], data=self.data)
        self.addCleanup(mount.stop)
        return mount

    def test_read_only_refuses_changes_and_reads_without_open_requests(self):
        self.weft("put", "-", "/f", input=b"bytes")
        self.weft("snapshot", "create", "s1", "/")
        self.weft("put", "-", "/f", input=b"newer bytes")
        files = {f"d/{i:03d}": incompressible(f"ro{i}", 1000 + 5000 * i) for i in range(30)}
        mp = self.put_and_mount(files, "/tree").mountpoint
        self.assertEqual(read(os.path.join(mp, "f")), b"newer bytes")
        # A lookup in a snapshot tree opens that version's reader, not the live one.
        for _ in range(2):
            self.assertEqual(read(os.path.join(mp, ".weft", "snapshots", "s1", "f")), b"bytes")
        for missing, code in (("nothing", errno.ENOENT), ("tree/d/nothing", errno.ENOENT),
                              ("f/below", errno.ENOTDIR)):
            with self.assertRaises(OSError) as caught:
                os.stat(os.path.join(mp, missing))
            self.assertEqual(caught.exception.errno, code, missing)
        # A read-only local volume opens without asking the daemon: reads, rereads, several
        # descriptors at once and reads from the middle all see the right bytes.
        for _ in range(2):
            for rel, body in files.items():
                self.assertEqual(read(os.path.join(mp, "tree", rel)), body, rel)
        big = os.path.join(mp, "tree", "d/029")
        with open(big, "rb") as a, open(big, "rb") as b:
            a.seek(100_000)
            self.assertEqual(a.read(10), files["d/029"][100_000:100_010])
            self.assertEqual(b.read(), files["d/029"])
        with self.assertRaises(OSError) as caught:
            write(os.path.join(mp, "f"), b"x")
        self.assertEqual(caught.exception.errno, errno.EROFS)
        with self.assertRaises(OSError) as caught:
            os.mkdir(os.path.join(mp, ".weft", "snapshots", "s"))
        self.assertEqual(caught.exception.errno, errno.EROFS)

    def test_a_damaged_pack_is_an_error_never_wrong_bytes(self):
        # Replies lend the pack read buffer itself (no copy): a record whose bytes changed on
        # disk must still fail its checksum and reach the reader as EIO.
        files = {"good": incompressible("good", 300_000), "bad": incompressible("bad", 300_000)}
        mp = self.put_and_mount(files, "/d").mountpoint
        needle = files["bad"][150_000:150_064]
        damaged = 0
        for root, _, names in os.walk(os.path.join(self.data, "packs")):
            for name in names:
                path = os.path.join(root, name)
                at = read(path).find(needle)
                if at >= 0:
                    fd = os.open(path, os.O_WRONLY)
                    os.pwrite(fd, bytes([needle[10] ^ 0x40]), at + 10)
                    os.close(fd)
                    damaged += 1
        self.assertEqual(damaged, 1)
        with self.assertRaises(OSError) as caught:
            read(os.path.join(mp, "d", "bad"))
        self.assertEqual(caught.exception.errno, errno.EIO)
        self.assertEqual(read(os.path.join(mp, "d", "good")), files["good"])

    def test_lookups_that_no_read_follows_stop_reading_ahead(self):
        # A read-only mount starts reading a file's first chunks when it is looked up (an open
        # and a read usually follow); a scan that only stats must not read the whole volume.
        files = {f"d{i % 8}/{i:04d}": incompressible(f"scan{i}", 60_000) for i in range(1200)}
        mount = self.put_and_mount(files, "/scan")
        mp = mount.mountpoint
        io_file = f"/proc/{mount.proc.pid}/io"
        if not os.path.exists(io_file):
            self.skipTest("no per-process I/O accounting here")
        for root, _, names in os.walk(os.path.join(self.data, "packs")):
            for name in names:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)

        def disk_reads():
            with open(io_file) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("read_bytes"))

        before = disk_reads()
        for rel in files:  # one LOOKUP each, no readdir first
            self.assertEqual(os.stat(os.path.join(mp, "scan", rel)).st_size, 60_000)
        total = sum(len(b) for b in files.values())
        read_by_lookups = disk_reads() - before
        # The first window of lookups did read their files (64 of 60 KB), then they paused.
        self.assertGreater(read_by_lookups, 32 * 60_000)
        self.assertLess(read_by_lookups, total // 4)
        # Reads that follow lookups still see the right bytes.
        for rel in list(files)[:100]:
            self.assertEqual(read(os.path.join(mp, "scan", rel)), files[rel], rel)

    def test_usage_errors_are_one_line(self):
        proc = self.weft("mount", "--hub", "http://127.0.0.1:1", "--server", "http://x",
                         self.path("nowhere"), check=False)
        self.assert_one_line_error(proc, "exactly one of")
        os.makedirs(self.path("mp"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_HUB_")}
        proc = subprocess.run([self.bin, "mount", "--hub", "http://127.0.0.1:1", self.path("mp")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        self.assert_one_line_error(proc, "WEFT_HUB_ACCESS_KEY")


class NetworkMountTest(S3TestCase):
    """--hub (an embedded spoke) and --server (a running hub) over a real `weft serve`."""

    def setUp(self):
        super().setUp()
        require_fuse()
        self.s3 = self.boto3()
        self.s3.create_bucket(Bucket="data")
        self.files = {f"train/{i:03d}.bin": incompressible(f"n{i}", 1000 + i * 997)
                      for i in range(40)}
        for key, body in self.files.items():
            self.s3.put_object(Bucket="data", Key=key, Body=body)

    def env(self, prefix):
        env = dict(os.environ)
        env.update({f"WEFT_{prefix}ACCESS_KEY": ROOT_ACCESS,
                    f"WEFT_{prefix}SECRET_KEY": ROOT_SECRET})
        return env

    def start_mount(self, source_args, env):
        mp = self.path("mnt")
        mount = Mount(self.bin, mp, source_args, env=env)
        self.addCleanup(lambda: mount.proc.poll() is None and mount.stop())
        return mount, mp

    def test_embedded_spoke_reads_writes_and_sees_hub_changes_at_once(self):
        mount, mp = self.start_mount(
            ["--hub", self.hub.url, "--cache", self.path("cache"), "--portal", "/data"],
            self.env("HUB_"))
        for key, body in self.files.items():
            self.assertEqual(read(os.path.join(mp, "data", key)), body, key)
        # A file closed at the mount is committed at the hub.
        write(os.path.join(mp, "data", "ckpt.pt"), b"weights")
        self.assertEqual(self.s3.get_object(Bucket="data", Key="ckpt.pt")["Body"].read(),
                         b"weights")
        # A change at the hub is what the next open reads.
        self.s3.put_object(Bucket="data", Key="train/000.bin", Body=b"changed at the hub")
        self.assertEqual(read(os.path.join(mp, "data", "train", "000.bin")),
                         b"changed at the hub")
        self.s3.put_object(Bucket="data", Key="train/new.bin", Body=b"new")
        deadline = time.time() + 5
        while "new.bin" not in os.listdir(os.path.join(mp, "data", "train")):
            self.assertLess(time.time(), deadline, "a new hub file never appeared")
            time.sleep(0.1)
        # NeuralCache's control files.
        stats = json.loads(read(os.path.join(mp, ".weft", "cache", "stats")))
        self.assertIn("policy", stats)
        body = {"dataset": "/data/train", "paths": [f"/data/train/{i:03d}.bin" for i in range(5)]}
        write(os.path.join(mp, ".weft", "cache", "hints"), json.dumps(body).encode())
        with self.assertRaises(OSError) as caught:
            write(os.path.join(mp, ".weft", "cache", "hints"), b"{not json")
        self.assertEqual(caught.exception.errno, errno.EINVAL)
        with self.assertRaises(OSError) as caught:
            write(os.path.join(mp, ".weft", "cache", "hints"),
                  json.dumps({"dataset": "/data/train", "paths": ["/elsewhere/x"]}).encode())
        self.assertEqual(caught.exception.errno, errno.EINVAL)
        self.assertEqual(mount.stop(), 0)

    def test_server_mount_of_a_running_hub(self):
        mount, mp = self.start_mount(["--server", self.hub.url], self.env(""))
        self.assertEqual(sorted(os.listdir(os.path.join(mp, "data", "train"))),
                         sorted(k.split("/")[1] for k in self.files))
        for key, body in list(self.files.items())[:10]:
            self.assertEqual(read(os.path.join(mp, "data", key)), body, key)
        write(os.path.join(mp, "data", "from-mount"), b"hello hub")
        self.assertEqual(self.s3.get_object(Bucket="data", Key="from-mount")["Body"].read(),
                         b"hello hub")
        self.assertEqual(mount.stop(), 0)


if __name__ == "__main__":
    unittest.main()
