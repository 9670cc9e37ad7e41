"""An independent POSIX conformance suite for `weft mount`, in the spirit of pjdfstest.

The tests are written from the POSIX and Linux man pages (open(2), creat(2), mkdir(2),
rmdir(2), unlink(2), unlinkat(2), rename(2), renameat2(2), link(2), symlink(2), readlink(2),
chmod(2), chown(2), truncate(2), utimensat(2), mknod(2), mkfifo(3), stat(2), access(2),
readdir(3), statvfs(3)), not from Weft's code. For each call they check what success does
(mode bits, owner, size, link counts, inode numbers, and which of atime/mtime/ctime of the
object and of its parent directory are marked for update) and the errno of every error case
that root or an unprivileged user (uid/gid 65534) can provoke. The errors of path resolution
(path_resolution(7): ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, EACCES, EBADF of a dirfd) are
checked once for every call that takes a path, in PathResolutionTests (one subTest per call).

Every family of tests runs against two targets:

- `...OnControl`: a directory on this machine's own file system. It proves the test right:
  every test must pass there.
- `...OnWeft`: a fresh `weft mount --data DIR MOUNTPOINT` of an empty volume (one mount per
  class). Only what Weft documents as unsupported (RENAME_EXCHANGE) may be skipped there.

Each test works in a fresh subdirectory, `self.root`, of its target. The suite needs root (it
acts as uid 65534 in forked children, chowns and makes device nodes) and /dev/fuse:

    cd tests/integration
    WEFT_BIN=/path/to/weft WEFT_SOURCE_DIR=/path/to/checkout \\
        /usr/bin/python3 -m unittest test_posix -v

`-k OnControl` or `-k OnWeft` runs one target; `-k Rename` one family. Both targets together
take about ten seconds.
"""

import collections
import contextlib
import ctypes
import errno
import os
import pickle
import select
import shutil
import signal
import stat
import tempfile
import time
import unittest

from mountlib import Mount, require_fuse
from weftlib import weft_bin

NOBODY = 65534
OTHER_GROUP = 1234  # a group neither root nor nobody belongs to (unless a test adds it)
TICK = 0.02  # seconds slept before a call whose timestamps are checked
LONG = "x" * 256  # one byte over NAME_MAX
NAME_MAX = 255
PATH_MAX = 4096


# ---------------------------------------------------------------------------------------------
# Low-level helpers


def touch(path, mode=0o644):
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, mode))


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


Times = collections.namedtuple("Times", "atime mtime ctime")
FIELDS = {"a": "atime", "m": "mtime", "c": "ctime"}


def times(path, follow_symlinks=False):
    """(atime, mtime, ctime) of path in nanoseconds."""
    st = os.stat(path, follow_symlinks=follow_symlinks)
    return Times(st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns)


def mode_of(path, follow_symlinks=False):
    return stat.S_IMODE(os.stat(path, follow_symlinks=follow_symlinks).st_mode)


def bad_fd():
    """A descriptor number that is not open."""
    fd = os.open("/dev/null", os.O_RDONLY)
    os.close(fd)
    return fd


def as_user(fn, *args, uid=NOBODY, gid=NOBODY, groups=(), effective_only=False, timeout=30):
    """Runs fn(*args) in a forked child as uid/gid (supplementary groups `groups`) and returns
    what it returned; an OSError in the child is raised here with the same errno. With
    effective_only only the effective ids change (the real ones stay root)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            try:
                os.setgroups(list(groups))
                if effective_only:
                    os.setegid(gid)
                    os.seteuid(uid)
                else:
                    os.setgid(gid)
                    os.setuid(uid)
                result = ("ok", fn(*args))
            except OSError as e:
                result = ("oserror", e.errno, str(e))
            except BaseException as e:  # noqa: BLE001 (reported to the parent)
                result = ("error", f"{type(e).__name__}: {e}")
            try:
                data = pickle.dumps(result)
            except Exception:  # noqa: BLE001
                data = pickle.dumps(("ok", repr(result[1])))
            with os.fdopen(w, "wb") as out:
                out.write(data)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"{getattr(fn, '__name__', fn)} as uid {uid} hung")
            chunk = os.read(r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if not chunks:
        raise AssertionError(f"the child running {getattr(fn, '__name__', fn)} died")
    result = pickle.loads(b"".join(chunks))
    if result[0] == "ok":
        return result[1]
    if result[0] == "oserror":
        raise OSError(result[1], f"as uid {uid}: {result[2]}")
    raise AssertionError(f"as uid {uid}: {result[1]}")


def as_nobody(fn, *args):
    """fn(*args) as uid/gid 65534 with no supplementary groups."""
    return as_user(fn, *args)


# What Python's os module cannot reach, through libc.
_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_EACCESS = 0x200
AT_SYMLINK_NOFOLLOW = 0x100
AT_SYMLINK_FOLLOW = 0x400
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2


def _check(result, *names):
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), *names)


def renameat2(old, new, flags):
    fn = _libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    _check(fn(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags), old)


def linkat(src, dst, follow_symlinks):
    """linkat(2); os.link(follow_symlinks=True) calls link(2), which does not follow."""
    fn = _libc.linkat
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    flags = AT_SYMLINK_FOLLOW if follow_symlinks else 0
    _check(fn(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags), src)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _timespec(value):
    """value: nanoseconds, or ("special", tv_nsec) for UTIME_NOW/UTIME_OMIT/invalid values."""
    if isinstance(value, tuple):
        return _Timespec(0, value[1])
    return _Timespec(value // 10**9, value % 10**9)


NOW, OMIT = ("special", UTIME_NOW), ("special", UTIME_OMIT)


def utimensat(path, atime, mtime, follow_symlinks=True):
    """utimensat(2) with UTIME_NOW/UTIME_OMIT reachable: atime/mtime are ns, NOW or OMIT."""
    fn = _libc.utimensat
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Timespec), ctypes.c_int]
    ts = (_Timespec * 2)(_timespec(atime), _timespec(mtime))
    flags = 0 if follow_symlinks else AT_SYMLINK_NOFOLLOW
    _check(fn(AT_FDCWD, os.fsencode(path), ts, flags), path)


def faccessat(path, mode, effective=False):
    """access(2) that raises the errno (os.access only answers True/False)."""
    fn = _libc.faccessat
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    _check(fn(AT_FDCWD, os.fsencode(path), mode, AT_EACCESS if effective else 0), path)


def mount_options(path):
    """The options of the mount that holds path (from /proc/self/mounts)."""
    path = os.path.realpath(path)
    best, options = "", []
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            mp = fields[1].replace("\\040", " ")
            inside = path == mp or path.startswith(mp.rstrip("/") + "/")
            if inside and len(mp) >= len(best):
                best, options = mp, fields[3].split(",")
    return options


def wait_for_weft_bin(timeout=120):
    """$WEFT_BIN, waiting a while if a rebuild has it missing for a moment."""
    path = os.environ.get("WEFT_BIN")
    deadline = time.monotonic() + timeout
    while path and not os.access(path, os.X_OK) and time.monotonic() < deadline:
        time.sleep(2)
    return weft_bin()


# ---------------------------------------------------------------------------------------------
# Targets


class PosixCase(unittest.TestCase):
    """Helpers shared by every family; a target subclass sets `base`."""

    label = None      # "Control" or "Weft"
    base = None       # the directory each test's fresh subdirectory is made in
    unsupported = {}  # feature -> why this target may skip its tests

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if os.geteuid() != 0:
            raise unittest.SkipTest("the POSIX suite needs root: it acts as uid 65534 in "
                                    "forked children, chowns and makes device nodes")

    def setUp(self):
        super().setUp()
        self.root = tempfile.mkdtemp(prefix="t-", dir=self.base)
        os.chmod(self.root, 0o755)
        umask = os.umask(0o022)
        self.addCleanup(os.umask, umask)

    # Paths and fixtures -----------------------------------------------------------------

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def rel(self, path):
        return os.path.relpath(path, self.root) if isinstance(path, str) else path

    def file(self, name, data=b"", mode=0o644, uid=None, gid=None):
        path = self.p(name)
        write_file(path, data)
        if uid is not None or gid is not None:
            os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        os.chmod(path, mode)
        return path

    def dir(self, name, mode=0o755, uid=None, gid=None):
        path = self.p(name)
        os.mkdir(path)
        if uid is not None or gid is not None:
            os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        os.chmod(path, mode)
        return path

    def symlink(self, target, name):
        path = self.p(name)
        os.symlink(target, path)
        return path

    def world(self, name="w"):
        """A directory anyone may write in (0777, not sticky)."""
        return self.dir(name, 0o777)

    def sticky(self, name="sticky", uid=0):
        """A world-writable sticky directory (01777) owned by uid."""
        return self.dir(name, 0o1777, uid=uid, gid=uid)

    def loop(self):
        """Two symlinks that point at each other; returns one of them."""
        self.symlink("loop-b", "loop-a")
        self.symlink("loop-a", "loop-b")
        return self.p("loop-a")

    def locked(self):
        """A root-only directory (0700) holding a file `f` (0666) and a directory `d` (0777):
        uid 65534 cannot search it."""
        d = self.dir("locked", 0o700)
        self.file("locked/f", b"locked", 0o666)
        self.dir("locked/d", 0o777)
        return d

    def opened(self, path, flags=os.O_RDONLY, mode=0o644):
        fd = os.open(path, flags, mode)
        self.addCleanup(os.close, fd)
        return fd

    def skip_unsupported(self, feature):
        if feature in self.unsupported:
            self.skipTest(f"{self.label}: {self.unsupported[feature]}")

    def atime_on_access(self, path):
        """Whether reads mark atime here (every mount option but noatime says they do)."""
        return "noatime" not in mount_options(path)

    # Assertions -------------------------------------------------------------------------

    def describe(self, fn, args):
        if fn in (as_nobody, as_user) and args:
            return "as_nobody(" + self.describe(args[0], args[1:]) + ")"
        shown = ", ".join(repr(self.rel(a)) if isinstance(a, str) and a.startswith(self.root)
                          else repr(a) for a in args)
        return f"{getattr(fn, '__name__', repr(fn))}({shown})"

    def assert_errno(self, codes, fn, *args, **kwargs):
        """fn(*args, **kwargs) fails with errno `codes` (one code or a tuple of accepted ones)."""
        codes = codes if isinstance(codes, tuple) else (codes,)
        want = "/".join(errno.errorcode[c] for c in codes)
        call = self.describe(fn, args)
        try:
            fn(*args, **kwargs)
        except OSError as e:
            if e.errno not in codes:
                self.fail(f"{call}: expected {want}, got "
                          f"{errno.errorcode.get(e.errno, e.errno)} ({e})")
            return e
        self.fail(f"{call}: expected {want}, but it succeeded")

    def assert_nobody_errno(self, codes, fn, *args):
        return self.assert_errno(codes, as_nobody, fn, *args)

    def clock(self):
        """A moment before the call under test; timestamps it marks come after it."""
        since = time.time_ns()
        time.sleep(TICK)
        return since

    def assert_times_since(self, path, since, fields="amc"):
        """Every one of `fields` of path lies between `since` and now."""
        now = time.time_ns() + 10**6
        got = times(path)
        wrong = [f"{FIELDS[f]} of {self.rel(path)} is {getattr(got, FIELDS[f])}, not the time "
                 f"of the call ({since}..{now})"
                 for f in fields if not since <= getattr(got, FIELDS[f]) <= now]
        if wrong:
            self.fail("; ".join(wrong))

    @contextlib.contextmanager
    def marks(self, expected, follow_symlinks=False):
        """Checks which timestamps the block marks for update: `expected` maps a path to the
        fields ("a", "m", "c") that must advance; its other fields must stay as they were."""
        before = {p: times(p, follow_symlinks) for p in expected}
        time.sleep(TICK)
        yield
        wrong = []
        for p, fields in expected.items():
            after = times(p, follow_symlinks)
            for f in "amc":
                old, new = getattr(before[p], FIELDS[f]), getattr(after, FIELDS[f])
                if f in fields and not new > old:
                    wrong.append(f"{FIELDS[f]} of {self.rel(p)} was not marked for update")
                elif f not in fields and new != old:
                    wrong.append(f"{FIELDS[f]} of {self.rel(p)} changed ({new - old:+d} ns) "
                                 "but should not")
        if wrong:
            self.fail("; ".join(wrong))


class ControlTarget(PosixCase):
    """A directory on the machine's own file system: the reference every test must pass."""

    label = "Control"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = tempfile.mkdtemp(prefix="posix-control-")
        cls.addClassCleanup(shutil.rmtree, cls.base, ignore_errors=True)
        os.chmod(cls.base, 0o755)


class WeftTarget(PosixCase):
    """A fresh `weft mount --data` of an empty volume, one per class."""

    label = "Weft"
    unsupported = {"RENAME_EXCHANGE": "Weft documents RENAME_EXCHANGE as unsupported "
                                      "(docs/mount.md)"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        require_fuse()
        binary = wait_for_weft_bin()
        cls.tmp = tempfile.mkdtemp(prefix="posix-weft-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        os.chmod(cls.tmp, 0o755)  # uid 65534 must reach the mount point
        cls.mount = Mount(binary, os.path.join(cls.tmp, "mnt"), [], ["--allow-other"],
                          data=os.path.join(cls.tmp, "data"))
        cls.addClassCleanup(cls.stop_mount)
        cls.base = cls.mount.mountpoint

    @classmethod
    def stop_mount(cls):
        proc = cls.mount.proc
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except Exception:  # noqa: BLE001 (stop() below kills it)
                pass
        err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
        code = cls.mount.stop()
        if code != 0:
            raise AssertionError(f"weft mount exited {code}: {err[-2000:]}")


# ---------------------------------------------------------------------------------------------
# open(2), creat(2), openat(2)


class OpenTests:
    """open(2), creat(2), openat(2): the new file, each flag, permission checks."""

    def test_creat_makes_an_empty_regular_file_with_mode_masked_by_umask(self):
        path = self.p("f")
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o666))  # creat()
        st = os.lstat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o644)
        self.assertEqual((st.st_size, st.st_nlink), (0, 1))

    def test_o_creat_applies_a_umask_of_077(self):
        os.umask(0o077)
        touch(self.p("f"), 0o666)
        self.assertEqual(mode_of(self.p("f")), 0o600)

    def test_o_creat_keeps_mode_bits_the_umask_does_not_clear(self):
        touch(self.p("f"), 0o751)
        self.assertEqual(mode_of(self.p("f")), 0o751)

    def test_o_creat_gives_the_file_the_callers_effective_uid_and_gid(self):
        path = os.path.join(self.world(), "f")
        as_nobody(touch, path)
        st = os.stat(path)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))

    def test_o_creat_in_a_setgid_directory_takes_the_directorys_group(self):
        d = self.dir("sgid", 0o2777, gid=OTHER_GROUP)
        as_nobody(touch, os.path.join(d, "f"))
        st = os.stat(os.path.join(d, "f"))
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))

    def test_o_creat_marks_the_new_files_times_and_the_parents_mtime_and_ctime(self):
        since = self.clock()
        with self.marks({self.root: "mc"}):
            touch(self.p("f"))
        self.assert_times_since(self.p("f"), since)

    def test_o_creat_of_an_existing_file_changes_nothing(self):
        f = self.file("f", b"kept", 0o644)
        with self.marks({self.root: "", f: ""}):
            os.close(os.open(f, os.O_CREAT | os.O_WRONLY, 0o600))
        self.assertEqual(mode_of(f), 0o644)
        self.assertEqual(read_file(f), b"kept")

    def test_o_trunc_empties_the_file_and_marks_its_mtime_and_ctime(self):
        f = self.file("f", b"some bytes")
        ino = os.stat(f).st_ino
        with self.marks({f: "mc", self.root: ""}):
            os.close(os.open(f, os.O_WRONLY | os.O_TRUNC))
        st = os.stat(f)
        self.assertEqual((st.st_size, st.st_ino, stat.S_IMODE(st.st_mode)), (0, ino, 0o644))

    def test_o_creat_with_a_read_only_mode_still_returns_a_writable_descriptor(self):
        path = os.path.join(self.world(), "f")

        def create_and_write():
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o444)
            try:
                return os.write(fd, b"written")
            finally:
                os.close(fd)

        self.assertEqual(as_nobody(create_and_write), 7)
        self.assertEqual(read_file(path), b"written")
        self.assertEqual(mode_of(path), 0o444)

    def test_o_excl_on_an_existing_file_is_eexist(self):
        f = self.file("f")
        self.assert_errno(errno.EEXIST, os.open, f, os.O_CREAT | os.O_EXCL | os.O_WRONLY)

    def test_o_excl_on_an_existing_directory_is_eexist(self):
        d = self.dir("d")
        self.assert_errno(errno.EEXIST, os.open, d, os.O_CREAT | os.O_EXCL | os.O_RDONLY)

    def test_o_excl_on_a_dangling_symlink_is_eexist_and_creates_nothing(self):
        link = self.symlink("target", "link")
        self.assert_errno(errno.EEXIST, os.open, link, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        self.assertFalse(os.path.lexists(self.p("target")))

    def test_o_creat_through_a_dangling_symlink_creates_its_target(self):
        link = self.symlink("target", "link")
        fd = os.open(link, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"via link")
        os.close(fd)
        self.assertEqual(read_file(self.p("target")), b"via link")
        self.assertTrue(os.path.islink(link))

    def test_o_append_writes_at_the_end_whatever_the_offset(self):
        f = self.file("f", b"abc")
        fd = os.open(f, os.O_WRONLY | os.O_APPEND)
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, b"d")
        finally:
            os.close(fd)
        self.assertEqual(read_file(f), b"abcd")

    def test_o_directory_opens_a_directory(self):
        d = self.dir("d")
        fd = self.opened(d, os.O_RDONLY | os.O_DIRECTORY)
        self.assertTrue(stat.S_ISDIR(os.fstat(fd).st_mode))

    def test_o_directory_on_a_file_is_enotdir(self):
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.open, f, os.O_RDONLY | os.O_DIRECTORY)

    def test_o_nofollow_on_a_final_symlink_is_eloop(self):
        self.file("f")
        link = self.symlink("f", "link")
        self.assert_errno(errno.ELOOP, os.open, link, os.O_RDONLY | os.O_NOFOLLOW)

    def test_o_nofollow_still_follows_symlinks_earlier_in_the_path(self):
        self.dir("d")
        self.file("d/f", b"inside")
        self.symlink("d", "dlink")
        fd = self.opened(self.p("dlink", "f"), os.O_RDONLY | os.O_NOFOLLOW)
        self.assertEqual(os.read(fd, 100), b"inside")

    def test_a_trailing_slash_on_a_file_is_enotdir(self):
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.open, f + "/", os.O_RDONLY)

    def test_o_creat_with_a_trailing_slash_is_eisdir(self):
        self.assert_errno(errno.EISDIR, os.open, self.p("new") + "/", os.O_CREAT | os.O_WRONLY)

    def test_a_directory_opened_for_writing_is_eisdir(self):
        d = self.dir("d")
        self.assert_errno(errno.EISDIR, os.open, d, os.O_WRONLY)
        self.assert_errno(errno.EISDIR, os.open, d, os.O_RDWR)

    def test_o_creat_on_an_existing_directory_is_eisdir(self):
        d = self.dir("d")
        self.assert_errno(errno.EISDIR, os.open, d, os.O_CREAT | os.O_WRONLY)

    def test_a_name_of_255_bytes_is_allowed(self):
        path = self.p("y" * NAME_MAX)
        touch(path)
        self.assertTrue(os.path.isfile(path))
        self.assertEqual(os.listdir(self.root), ["y" * NAME_MAX])

    def test_o_creat_of_a_name_over_255_bytes_is_enametoolong(self):
        self.assert_errno(errno.ENAMETOOLONG, os.open, self.p(LONG), os.O_CREAT | os.O_WRONLY)
        self.assertEqual(os.listdir(self.root), [])

    def test_o_creat_without_write_permission_on_the_directory_is_eacces(self):
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, touch, os.path.join(d, "f"))
        self.assertEqual(os.listdir(d), [])

    def test_reading_without_read_permission_is_eacces(self):
        f = self.file("f", b"secret", 0o600)
        self.assert_nobody_errno(errno.EACCES, read_file, f)

    def test_writing_without_write_permission_is_eacces(self):
        f = self.file("f", b"kept", 0o644)
        self.assert_nobody_errno(errno.EACCES, os.open, f, os.O_WRONLY)
        self.assert_nobody_errno(errno.EACCES, os.open, f, os.O_RDWR)
        self.assertEqual(read_file(f), b"kept")

    def test_o_trunc_without_write_permission_is_eacces(self):
        f = self.file("f", b"kept", 0o644)
        self.assert_nobody_errno(errno.EACCES, os.open, f, os.O_RDONLY | os.O_TRUNC)
        self.assertEqual(read_file(f), b"kept")

    def test_the_owner_class_decides_for_the_owner_even_if_others_may(self):
        f = self.file("f", b"x", 0o077, uid=NOBODY, gid=NOBODY)
        self.assert_nobody_errno(errno.EACCES, read_file, f)

    def test_the_group_class_decides_for_a_member_even_if_others_may(self):
        f = self.file("f", b"x", 0o604, uid=0, gid=NOBODY)
        self.assert_nobody_errno(errno.EACCES, read_file, f)

    def test_group_read_permission_lets_a_member_read(self):
        f = self.file("f", b"for the group", 0o640, uid=0, gid=NOBODY)
        self.assertEqual(as_nobody(read_file, f), b"for the group")

    def test_openat_resolves_a_relative_path_from_the_directory_descriptor(self):
        d = self.dir("d")
        self.file("d/f", b"relative")
        dfd = self.opened(d, os.O_RDONLY | os.O_DIRECTORY)
        fd = os.open("f", os.O_RDONLY, dir_fd=dfd)
        self.addCleanup(os.close, fd)
        self.assertEqual(os.read(fd, 100), b"relative")


# ---------------------------------------------------------------------------------------------
# read(2), write(2) on what open(2) returned


class ReadWriteTests:
    """read(2) and write(2): timestamps, sizes and visibility of written data."""

    def test_write_marks_mtime_and_ctime_before_close(self):
        f = self.file("f", b"abc")
        fd = self.opened(f, os.O_WRONLY)
        with self.marks({f: "mc"}):
            os.write(fd, b"x")

    def test_write_size_shows_through_stat_before_close(self):
        f = self.file("f", b"abc")
        fd = self.opened(f, os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"defgh")
        self.assertEqual(os.fstat(fd).st_size, 8)
        self.assertEqual(os.stat(f).st_size, 8)

    def test_write_is_read_by_a_descriptor_opened_after_it(self):
        f = self.file("f", b"old!")
        fd = self.opened(f, os.O_WRONLY)
        os.write(fd, b"new")
        self.assertEqual(read_file(f), b"new!")

    def test_write_is_read_by_a_descriptor_opened_before_it(self):
        f = self.file("f", b"old!")
        reader = self.opened(f, os.O_RDONLY)
        writer = self.opened(f, os.O_WRONLY)
        os.write(writer, b"new")
        self.assertEqual(os.pread(reader, 100, 0), b"new!")

    def test_pwrite_past_the_end_fills_the_gap_with_zero_bytes(self):
        f = self.file("f", b"abc")
        fd = os.open(f, os.O_WRONLY)
        try:
            os.pwrite(fd, b"z", 100)
        finally:
            os.close(fd)
        self.assertEqual(read_file(f), b"abc" + bytes(97) + b"z")

    def test_read_marks_atime_unless_mounted_noatime(self):
        f = self.file("f", b"data")
        old = time.time_ns() - 3 * 86400 * 10**9
        os.utime(f, ns=(old, old))
        self.assertEqual(read_file(f), b"data")
        atime = os.stat(f).st_atime_ns
        if self.atime_on_access(f):
            self.assertGreater(atime, old, "read did not mark atime (the mount is not noatime)")
        else:
            self.assertEqual(atime, old)

    def test_read_of_a_write_only_descriptor_is_ebadf(self):
        fd = self.opened(self.file("f", b"abc"), os.O_WRONLY)
        self.assert_errno(errno.EBADF, os.read, fd, 10)

    def test_write_to_a_read_only_descriptor_is_ebadf(self):
        fd = self.opened(self.file("f", b"abc"), os.O_RDONLY)
        self.assert_errno(errno.EBADF, os.write, fd, b"x")

    def test_read_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.read, bad_fd(), 10)

    def test_read_of_a_directory_is_eisdir(self):
        fd = self.opened(self.dir("d"), os.O_RDONLY)
        self.assert_errno(errno.EISDIR, os.read, fd, 10)


# ---------------------------------------------------------------------------------------------
# mkdir(2), mkdirat(2)


class MkdirTests:
    """mkdir(2), mkdirat(2)."""

    def test_mkdir_makes_an_empty_directory_with_mode_masked_by_umask(self):
        os.mkdir(self.p("d"), 0o777)
        st = os.lstat(self.p("d"))
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o755)
        self.assertEqual(os.listdir(self.p("d")), [])

    def test_mkdir_applies_the_mode_given(self):
        os.mkdir(self.p("d"), 0o701)
        self.assertEqual(mode_of(self.p("d")), 0o701)

    def test_mkdir_keeps_the_sticky_bit_of_mode(self):
        os.mkdir(self.p("d"), 0o1777)
        self.assertEqual(mode_of(self.p("d")), 0o1755)

    def test_a_new_directory_has_two_links_and_adds_one_to_its_parent(self):
        before = os.stat(self.root).st_nlink
        os.mkdir(self.p("d"))
        self.assertEqual(os.stat(self.p("d")).st_nlink, 2)
        self.assertEqual(os.stat(self.root).st_nlink, before + 1)

    def test_dot_and_dotdot_of_a_new_directory_are_itself_and_its_parent(self):
        os.mkdir(self.p("d"))
        self.assertEqual(os.stat(self.p("d", ".")).st_ino, os.stat(self.p("d")).st_ino)
        self.assertEqual(os.stat(self.p("d", "..")).st_ino, os.stat(self.root).st_ino)

    def test_mkdir_gives_the_directory_the_callers_effective_uid_and_gid(self):
        path = os.path.join(self.world(), "d")
        as_nobody(os.mkdir, path)
        st = os.stat(path)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))

    def test_mkdir_in_a_setgid_directory_inherits_its_group_and_setgid_bit(self):
        d = self.dir("sgid", 0o2777, gid=OTHER_GROUP)
        as_nobody(os.mkdir, os.path.join(d, "sub"), 0o755)
        st = os.stat(os.path.join(d, "sub"))
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))
        self.assertTrue(st.st_mode & stat.S_ISGID, oct(st.st_mode))

    def test_mkdir_marks_the_new_directorys_times_and_the_parents_mtime_and_ctime(self):
        since = self.clock()
        with self.marks({self.root: "mc"}):
            os.mkdir(self.p("d"))
        self.assert_times_since(self.p("d"), since)

    def test_a_trailing_slash_is_accepted(self):
        os.mkdir(self.p("d") + "/")
        self.assertTrue(os.path.isdir(self.p("d")))

    def test_an_existing_directory_is_eexist(self):
        d = self.dir("d")
        self.assert_errno(errno.EEXIST, os.mkdir, d)

    def test_an_existing_file_is_eexist(self):
        f = self.file("f")
        self.assert_errno(errno.EEXIST, os.mkdir, f)

    def test_an_existing_dangling_symlink_is_eexist(self):
        link = self.symlink("nowhere", "link")
        self.assert_errno(errno.EEXIST, os.mkdir, link)
        self.assertFalse(os.path.lexists(self.p("nowhere")))

    def test_a_failed_mkdir_changes_no_times_of_the_parent(self):
        d = self.dir("d")
        with self.marks({self.root: ""}):
            self.assert_errno(errno.EEXIST, os.mkdir, d)

    def test_a_name_over_255_bytes_is_enametoolong(self):
        self.assert_errno(errno.ENAMETOOLONG, os.mkdir, self.p(LONG))
        self.assertEqual(os.listdir(self.root), [])

    def test_without_write_permission_on_the_parent_is_eacces(self):
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, os.mkdir, os.path.join(d, "sub"))


# ---------------------------------------------------------------------------------------------
# rmdir(2)


class RmdirTests:
    """rmdir(2)."""

    def test_rmdir_removes_an_empty_directory(self):
        d = self.dir("d")
        os.rmdir(d)
        self.assertFalse(os.path.lexists(d))
        self.assertEqual(os.listdir(self.root), [])

    def test_rmdir_takes_one_link_from_the_parent_and_marks_its_mtime_and_ctime(self):
        d = self.dir("d")
        nlink = os.stat(self.root).st_nlink
        with self.marks({self.root: "mc"}):
            os.rmdir(d)
        self.assertEqual(os.stat(self.root).st_nlink, nlink - 1)

    def test_a_directory_holding_a_file_is_enotempty(self):
        d = self.dir("d")
        self.file("d/f")
        self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rmdir, d)

    def test_a_directory_holding_a_directory_is_enotempty(self):
        d = self.dir("d")
        self.dir("d/sub")
        self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rmdir, d)

    def test_a_directory_holding_a_symlink_is_enotempty(self):
        d = self.dir("d")
        self.symlink("nowhere", "d/link")
        self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rmdir, d)

    def test_a_failed_rmdir_keeps_the_directory_and_the_parents_times(self):
        d = self.dir("d")
        self.file("d/f")
        with self.marks({self.root: "", d: ""}):
            self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rmdir, d)
        self.assertEqual(os.listdir(d), ["f"])

    def test_dot_as_the_last_component_is_einval(self):
        d = self.dir("d")
        self.assert_errno(errno.EINVAL, os.rmdir, os.path.join(d, "."))

    def test_dotdot_as_the_last_component_is_enotempty(self):
        self.dir("d")
        self.dir("d/sub")
        self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rmdir, self.p("d", "sub", ".."))

    def test_a_file_is_enotdir(self):
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.rmdir, f)
        self.assertTrue(os.path.isfile(f))

    def test_a_symlink_to_a_directory_is_enotdir(self):
        self.dir("d")
        link = self.symlink("d", "link")
        self.assert_errno(errno.ENOTDIR, os.rmdir, link)
        self.assertTrue(os.path.isdir(self.p("d")))

    def test_without_write_permission_on_the_parent_is_eacces(self):
        parent = self.dir("parent", 0o755)
        self.dir("parent/d", 0o777)
        self.assert_nobody_errno(errno.EACCES, os.rmdir, os.path.join(parent, "d"))

    def test_a_sticky_parent_refuses_another_users_directory_with_eperm(self):
        s = self.sticky()
        self.dir("sticky/d", 0o777)
        self.assert_nobody_errno(errno.EPERM, os.rmdir, os.path.join(s, "d"))
        self.assertTrue(os.path.isdir(os.path.join(s, "d")))

    def test_a_sticky_parent_lets_the_directorys_owner_remove_it(self):
        s = self.sticky()
        as_nobody(os.mkdir, os.path.join(s, "mine"))
        as_nobody(os.rmdir, os.path.join(s, "mine"))
        self.assertEqual(os.listdir(s), [])

    def test_a_sticky_parent_lets_its_own_owner_remove_anything(self):
        s = self.sticky(uid=NOBODY)
        self.dir("sticky/roots", 0o755)
        as_nobody(os.rmdir, os.path.join(s, "roots"))
        self.assertEqual(os.listdir(s), [])

    def test_a_removed_directory_still_open_accepts_no_new_entries(self):
        d = self.dir("d")
        fd = self.opened(d, os.O_RDONLY | os.O_DIRECTORY)
        os.rmdir(d)
        self.assertTrue(stat.S_ISDIR(os.fstat(fd).st_mode))
        self.assert_errno(errno.ENOENT, os.open, "f", os.O_CREAT | os.O_WRONLY, dir_fd=fd)


# ---------------------------------------------------------------------------------------------
# unlink(2), unlinkat(2)


class UnlinkTests:
    """unlink(2), unlinkat(2) with and without AT_REMOVEDIR."""

    def test_unlink_removes_the_name(self):
        f = self.file("f", b"x")
        os.unlink(f)
        self.assertFalse(os.path.lexists(f))
        self.assertEqual(os.listdir(self.root), [])

    def test_unlink_marks_the_parents_mtime_and_ctime(self):
        f = self.file("f", b"x")
        with self.marks({self.root: "mc"}):
            os.unlink(f)

    def test_unlink_of_a_symlink_removes_the_link_not_its_target(self):
        f = self.file("f", b"target")
        link = self.symlink("f", "link")
        os.unlink(link)
        self.assertFalse(os.path.lexists(link))
        self.assertEqual(read_file(f), b"target")

    def test_unlink_of_a_dangling_symlink_works(self):
        link = self.symlink("nowhere", "link")
        os.unlink(link)
        self.assertFalse(os.path.lexists(link))

    def test_an_open_file_stays_readable_after_its_last_name_goes(self):
        f = self.file("f", b"still here")
        fd = self.opened(f)
        os.unlink(f)
        self.assertEqual(os.fstat(fd).st_nlink, 0)
        self.assertEqual(os.pread(fd, 100, 0), b"still here")

    def test_a_directory_is_eisdir(self):
        d = self.dir("d")
        self.assert_errno(errno.EISDIR, os.unlink, d)
        self.assertTrue(os.path.isdir(d))

    def test_a_dangling_symlink_as_a_path_component_is_enoent(self):
        link = self.symlink("nowhere", "link")
        self.assert_errno(errno.ENOENT, os.unlink, os.path.join(link, "f"))

    def test_a_trailing_slash_on_a_file_is_enotdir(self):
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.unlink, f + "/")
        self.assertTrue(os.path.isfile(f))

    def test_without_write_permission_on_the_parent_is_eacces(self):
        d = self.dir("d", 0o755)
        self.file("d/f", b"x", 0o666)
        self.assert_nobody_errno(errno.EACCES, os.unlink, os.path.join(d, "f"))
        self.assertTrue(os.path.exists(os.path.join(d, "f")))

    def test_only_the_directorys_permissions_matter_not_the_files(self):
        w = self.world()
        self.file("w/f", b"x", 0o400)
        as_nobody(os.unlink, os.path.join(w, "f"))
        self.assertEqual(os.listdir(w), [])

    def test_a_sticky_directory_refuses_another_users_file_with_eperm(self):
        s = self.sticky()
        self.file("sticky/f", b"x", 0o666)
        self.assert_nobody_errno(errno.EPERM, os.unlink, os.path.join(s, "f"))
        self.assertTrue(os.path.exists(os.path.join(s, "f")))

    def test_a_sticky_directory_lets_the_files_owner_remove_it(self):
        s = self.sticky()
        as_nobody(touch, os.path.join(s, "mine"))
        as_nobody(os.unlink, os.path.join(s, "mine"))
        self.assertEqual(os.listdir(s), [])

    def test_a_sticky_directory_lets_its_own_owner_remove_anything(self):
        s = self.sticky(uid=NOBODY)
        self.file("sticky/roots", b"x", 0o644)
        as_nobody(os.unlink, os.path.join(s, "roots"))
        self.assertEqual(os.listdir(s), [])

    def test_a_failed_unlink_changes_no_times(self):
        d = self.dir("d")
        with self.marks({self.root: "", d: ""}):
            self.assert_errno(errno.EISDIR, os.unlink, d)

    def test_unlinkat_with_removedir_removes_an_empty_directory(self):
        self.dir("d")
        dfd = self.opened(self.root, os.O_RDONLY | os.O_DIRECTORY)
        os.rmdir("d", dir_fd=dfd)  # unlinkat(dfd, "d", AT_REMOVEDIR)
        self.assertEqual(os.listdir(self.root), [])

    def test_unlinkat_with_removedir_on_a_file_is_enotdir(self):
        self.file("f")
        dfd = self.opened(self.root, os.O_RDONLY | os.O_DIRECTORY)
        self.assert_errno(errno.ENOTDIR, os.rmdir, "f", dir_fd=dfd)

    def test_unlinkat_without_removedir_on_a_directory_is_eisdir(self):
        self.dir("d")
        dfd = self.opened(self.root, os.O_RDONLY | os.O_DIRECTORY)
        self.assert_errno(errno.EISDIR, os.unlink, "d", dir_fd=dfd)

    def test_unlinkat_resolves_a_relative_path_from_the_directory_descriptor(self):
        d = self.dir("d")
        self.file("d/f")
        dfd = self.opened(d, os.O_RDONLY | os.O_DIRECTORY)
        os.unlink("f", dir_fd=dfd)
        self.assertEqual(os.listdir(d), [])


# ---------------------------------------------------------------------------------------------
# rename(2), renameat(2), renameat2(2)


class RenameTests:
    """rename(2), renameat(2), renameat2(2) flags."""

    def test_rename_moves_a_file_and_keeps_its_inode(self):
        f = self.file("f", b"moved")
        ino = os.stat(f).st_ino
        os.rename(f, self.p("g"))
        self.assertFalse(os.path.lexists(f))
        self.assertEqual(os.stat(self.p("g")).st_ino, ino)
        self.assertEqual(read_file(self.p("g")), b"moved")

    def test_rename_replaces_an_existing_file(self):
        f = self.file("f", b"new")
        self.file("g", b"old")
        ino = os.stat(f).st_ino
        os.rename(f, self.p("g"))
        self.assertEqual(os.listdir(self.root), ["g"])
        self.assertEqual(os.stat(self.p("g")).st_ino, ino)
        self.assertEqual(read_file(self.p("g")), b"new")

    def test_rename_keeps_the_files_mtime(self):
        f = self.file("f", b"x")
        mtime = os.stat(f).st_mtime_ns
        time.sleep(TICK)
        os.rename(f, self.p("g"))
        self.assertEqual(os.stat(self.p("g")).st_mtime_ns, mtime)

    def test_rename_marks_mtime_and_ctime_of_both_parents(self):
        a, b = self.dir("a"), self.dir("b")
        self.file("a/f")
        with self.marks({a: "mc", b: "mc"}):
            os.rename(os.path.join(a, "f"), os.path.join(b, "f"))

    def test_rename_within_a_directory_marks_its_mtime_and_ctime(self):
        f = self.file("f")
        with self.marks({self.root: "mc"}):
            os.rename(f, self.p("g"))

    def test_rename_of_a_directory_to_another_parent_moves_its_link(self):
        a, b = self.dir("a"), self.dir("b")
        self.dir("a/d")
        na, nb = os.stat(a).st_nlink, os.stat(b).st_nlink
        os.rename(os.path.join(a, "d"), os.path.join(b, "d"))
        self.assertEqual(os.stat(a).st_nlink, na - 1)
        self.assertEqual(os.stat(b).st_nlink, nb + 1)
        self.assertEqual(os.stat(os.path.join(b, "d", "..")).st_ino, os.stat(b).st_ino)

    def test_rename_of_a_directory_over_an_empty_directory_replaces_it(self):
        d = self.dir("d")
        self.file("d/f", b"inside")
        self.dir("e")
        ino = os.stat(d).st_ino
        os.rename(d, self.p("e"))
        self.assertEqual(os.stat(self.p("e")).st_ino, ino)
        self.assertEqual(os.listdir(self.p("e")), ["f"])
        self.assertEqual(sorted(os.listdir(self.root)), ["e"])

    def test_rename_to_the_same_name_does_nothing(self):
        f = self.file("f", b"x")
        ino = os.stat(f).st_ino
        with self.marks({self.root: ""}):
            os.rename(f, f)
        self.assertEqual(os.stat(f).st_ino, ino)

    def test_rename_of_a_symlink_moves_the_link_not_its_target(self):
        self.file("f", b"target")
        link = self.symlink("f", "link")
        os.rename(link, self.p("moved"))
        self.assertEqual(os.readlink(self.p("moved")), "f")
        self.assertEqual(read_file(self.p("f")), b"target")

    def test_rename_over_a_symlink_replaces_the_link_not_its_target(self):
        self.file("target", b"kept")
        self.symlink("target", "link")
        f = self.file("f", b"new")
        os.rename(f, self.p("link"))
        self.assertFalse(os.path.islink(self.p("link")))
        self.assertEqual(read_file(self.p("link")), b"new")
        self.assertEqual(read_file(self.p("target")), b"kept")

    def test_an_open_file_replaced_by_rename_keeps_its_old_content(self):
        old = self.file("g", b"old content")
        fd = self.opened(old)
        os.rename(self.file("f", b"new content"), old)
        self.assertEqual(os.pread(fd, 100, 0), b"old content")
        self.assertEqual(read_file(old), b"new content")

    def test_a_directory_over_a_non_empty_directory_is_enotempty(self):
        d = self.dir("d")
        self.dir("e")
        self.file("e/f")
        self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rename, d, self.p("e"))

    def test_a_failed_rename_changes_nothing(self):
        d, e = self.dir("d"), self.dir("e")
        self.file("e/f")
        with self.marks({self.root: "", d: "", e: ""}):
            self.assert_errno((errno.ENOTEMPTY, errno.EEXIST), os.rename, d, e)
        self.assertEqual(os.listdir(e), ["f"])

    def test_a_file_over_a_directory_is_eisdir(self):
        f = self.file("f")
        d = self.dir("d")
        self.assert_errno(errno.EISDIR, os.rename, f, d)

    def test_a_directory_over_a_file_is_enotdir(self):
        d = self.dir("d")
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.rename, d, f)

    def test_a_directory_into_its_own_subdirectory_is_einval(self):
        d = self.dir("d")
        self.dir("d/sub")
        self.assert_errno(errno.EINVAL, os.rename, d, os.path.join(d, "sub", "d"))
        self.assert_errno(errno.EINVAL, os.rename, d, os.path.join(d, "sub"))

    def test_dot_or_dotdot_as_a_last_component_is_ebusy_or_einval(self):
        d = self.dir("d")
        f = self.file("f")
        # POSIX says EINVAL; Linux answers EBUSY (rename(2)).
        self.assert_errno((errno.EBUSY, errno.EINVAL), os.rename, os.path.join(d, "."), self.p("x"))
        self.assert_errno((errno.EBUSY, errno.EINVAL), os.rename, f, os.path.join(d, ".."))

    def test_a_trailing_slash_on_a_file_is_enotdir(self):
        f = self.file("f")
        self.assert_errno(errno.ENOTDIR, os.rename, f + "/", self.p("g"))
        self.assert_errno(errno.ENOTDIR, os.rename, f, self.p("g") + "/")

    def test_a_destination_name_over_255_bytes_is_enametoolong(self):
        f = self.file("f")
        self.assert_errno(errno.ENAMETOOLONG, os.rename, f, self.p(LONG))
        self.assertEqual(os.listdir(self.root), ["f"])

    def test_without_write_permission_on_the_source_directory_is_eacces(self):
        d = self.dir("d", 0o755)
        self.file("d/f", b"x", 0o666)
        w = self.world()
        self.assert_nobody_errno(errno.EACCES, os.rename, os.path.join(d, "f"),
                                 os.path.join(w, "f"))

    def test_without_write_permission_on_the_destination_directory_is_eacces(self):
        w = self.world()
        as_nobody(touch, os.path.join(w, "f"))
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, os.rename, os.path.join(w, "f"),
                                 os.path.join(d, "f"))

    def test_moving_a_directory_to_a_new_parent_needs_write_permission_on_it(self):
        a, b = self.world("a"), self.world("b")
        self.dir("a/d", 0o755)  # root's: its '..' entry cannot be rewritten by nobody
        self.assert_nobody_errno(errno.EACCES, os.rename, os.path.join(a, "d"),
                                 os.path.join(b, "d"))

    def test_a_sticky_source_directory_refuses_another_users_file_with_eperm(self):
        s = self.sticky()
        self.file("sticky/f", b"x", 0o666)
        w = self.world()
        self.assert_nobody_errno(errno.EPERM, os.rename, os.path.join(s, "f"),
                                 os.path.join(w, "f"))

    def test_a_sticky_directory_refuses_replacing_another_users_file_with_eperm(self):
        s = self.sticky()
        self.file("sticky/theirs", b"kept", 0o666)
        as_nobody(touch, os.path.join(s, "mine"))
        self.assert_nobody_errno(errno.EPERM, os.rename, os.path.join(s, "mine"),
                                 os.path.join(s, "theirs"))
        self.assertEqual(read_file(os.path.join(s, "theirs")), b"kept")

    def test_renameat_resolves_relative_paths_from_both_descriptors(self):
        a, b = self.dir("a"), self.dir("b")
        self.file("a/f", b"moved")
        fa = self.opened(a, os.O_RDONLY | os.O_DIRECTORY)
        fb = self.opened(b, os.O_RDONLY | os.O_DIRECTORY)
        os.rename("f", "g", src_dir_fd=fa, dst_dir_fd=fb)
        self.assertEqual(read_file(os.path.join(b, "g")), b"moved")

    def test_renameat2_noreplace_moves_to_a_free_name(self):
        f = self.file("f", b"x")
        renameat2(f, self.p("g"), RENAME_NOREPLACE)
        self.assertEqual(os.listdir(self.root), ["g"])

    def test_renameat2_noreplace_onto_an_existing_name_is_eexist(self):
        f = self.file("f", b"f")
        g = self.file("g", b"g")
        self.assert_errno(errno.EEXIST, renameat2, f, g, RENAME_NOREPLACE)
        self.assertEqual((read_file(f), read_file(g)), (b"f", b"g"))

    def test_renameat2_exchange_swaps_two_names(self):
        self.skip_unsupported("RENAME_EXCHANGE")
        f = self.file("f", b"was f")
        d = self.dir("d")
        ino_f, ino_d = os.stat(f).st_ino, os.stat(d).st_ino
        renameat2(f, d, RENAME_EXCHANGE)
        self.assertEqual(read_file(d), b"was f")
        self.assertEqual((os.stat(d).st_ino, os.stat(f).st_ino), (ino_f, ino_d))
        self.assertTrue(os.path.isdir(f))

    def test_renameat2_exchange_with_a_missing_name_is_enoent(self):
        self.skip_unsupported("RENAME_EXCHANGE")
        f = self.file("f")
        self.assert_errno(errno.ENOENT, renameat2, f, self.p("missing"), RENAME_EXCHANGE)

    def test_renameat2_noreplace_with_exchange_is_einval(self):
        f, g = self.file("f"), self.file("g")
        self.assert_errno(errno.EINVAL, renameat2, f, g, RENAME_NOREPLACE | RENAME_EXCHANGE)

    def test_renameat2_with_an_unknown_flag_is_einval(self):
        f = self.file("f")
        self.assert_errno(errno.EINVAL, renameat2, f, self.p("g"), 1 << 12)


# ---------------------------------------------------------------------------------------------
# link(2), linkat(2)


class LinkTests:
    """link(2), linkat(2): hard links."""

    def test_link_gives_a_second_name_to_the_same_inode(self):
        f = self.file("f", b"shared")
        os.link(f, self.p("g"))
        self.assertEqual(os.stat(self.p("g")).st_ino, os.stat(f).st_ino)
        self.assertEqual(read_file(self.p("g")), b"shared")
        self.assertEqual(sorted(os.listdir(self.root)), ["f", "g"])

    def test_link_raises_nlink_seen_through_every_name_and_descriptor(self):
        f = self.file("f")
        fd = self.opened(f)
        os.link(f, self.p("g"))
        self.assertEqual(os.stat(f).st_nlink, 2)
        self.assertEqual(os.stat(self.p("g")).st_nlink, 2)
        self.assertEqual(os.fstat(fd).st_nlink, 2)

    def test_link_marks_the_files_ctime_and_the_new_parents_mtime_and_ctime(self):
        d = self.dir("d")
        f = self.file("f")
        with self.marks({f: "c", d: "mc"}):
            os.link(f, os.path.join(d, "g"))

    def test_data_written_through_one_name_reads_through_the_other(self):
        f = self.file("f", b"before")
        os.link(f, self.p("g"))
        write_file(f, b"after")
        self.assertEqual(read_file(self.p("g")), b"after")

    def test_chmod_and_chown_through_one_name_show_through_the_other(self):
        f = self.file("f")
        os.link(f, self.p("g"))
        os.chmod(f, 0o600)
        os.chown(f, NOBODY, OTHER_GROUP)
        st = os.stat(self.p("g"))
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid),
                         (0o600, NOBODY, OTHER_GROUP))

    def test_unlinking_one_name_keeps_the_other_and_lowers_nlink(self):
        f = self.file("f", b"survives")
        os.link(f, self.p("g"))
        os.unlink(f)
        st = os.stat(self.p("g"))
        self.assertEqual(st.st_nlink, 1)
        self.assertEqual(read_file(self.p("g")), b"survives")
        self.assertEqual(os.listdir(self.root), ["g"])

    def test_unlinking_one_name_marks_the_files_ctime(self):
        f = self.file("f")
        g = self.p("g")
        os.link(f, g)
        with self.marks({g: "c", self.root: "mc"}):
            os.unlink(f)

    def test_link_into_another_directory(self):
        f = self.file("f", b"x")
        d = self.dir("d")
        os.link(f, os.path.join(d, "g"))
        self.assertEqual(os.stat(os.path.join(d, "g")).st_ino, os.stat(f).st_ino)

    def test_four_names_count_four_and_survive_renames(self):
        f = self.file("f", b"x")
        for name in ("g", "h", "i"):
            os.link(f, self.p(name))
        os.rename(self.p("h"), self.p("renamed"))
        for name in ("f", "g", "renamed", "i"):
            self.assertEqual(os.stat(self.p(name)).st_nlink, 4, name)
        self.assertEqual(len({os.stat(self.p(n)).st_ino for n in ("f", "g", "renamed", "i")}), 1)

    def test_renaming_one_link_onto_another_of_the_same_file_does_nothing(self):
        f = self.file("f")
        g = self.p("g")
        os.link(f, g)
        os.rename(f, g)
        self.assertEqual(sorted(os.listdir(self.root)), ["f", "g"])
        self.assertEqual(os.stat(g).st_nlink, 2)

    def test_renaming_a_file_over_another_link_lowers_that_files_nlink(self):
        f = self.file("f", b"f")
        os.link(f, self.p("f2"))
        g = self.file("g", b"g")
        os.rename(g, self.p("f2"))
        self.assertEqual(os.stat(f).st_nlink, 1)
        self.assertEqual(read_file(self.p("f2")), b"g")

    def test_a_file_lives_until_its_last_name_and_descriptor_are_gone(self):
        f = self.file("f", b"kept open")
        os.link(f, self.p("g"))
        fd = self.opened(f)
        os.unlink(f)
        os.unlink(self.p("g"))
        self.assertEqual(os.fstat(fd).st_nlink, 0)
        self.assertEqual(os.pread(fd, 100, 0), b"kept open")

    def test_link_of_a_symlink_without_following_links_the_symlink_itself(self):
        self.file("f")
        link = self.symlink("f", "link")
        os.link(link, self.p("hard"), follow_symlinks=False)
        self.assertTrue(os.path.islink(self.p("hard")))
        self.assertEqual(os.lstat(self.p("hard")).st_ino, os.lstat(link).st_ino)
        self.assertEqual(os.lstat(link).st_nlink, 2)

    def test_link_of_a_symlink_when_following_links_its_target(self):
        f = self.file("f")
        link = self.symlink("f", "link")
        linkat(link, self.p("hard"), follow_symlinks=True)
        self.assertFalse(os.path.islink(self.p("hard")))
        self.assertEqual(os.stat(self.p("hard")).st_ino, os.stat(f).st_ino)

    def test_a_directory_is_eperm(self):
        d = self.dir("d")
        self.assert_errno(errno.EPERM, os.link, d, self.p("e"))

    def test_an_existing_file_as_destination_is_eexist(self):
        f, g = self.file("f", b"f"), self.file("g", b"g")
        self.assert_errno(errno.EEXIST, os.link, f, g)
        self.assertEqual(read_file(g), b"g")

    def test_an_existing_directory_as_destination_is_eexist(self):
        f, d = self.file("f"), self.dir("d")
        self.assert_errno(errno.EEXIST, os.link, f, d)

    def test_an_existing_dangling_symlink_as_destination_is_eexist(self):
        f = self.file("f")
        link = self.symlink("nowhere", "link")
        self.assert_errno(errno.EEXIST, os.link, f, link)
        self.assertFalse(os.path.lexists(self.p("nowhere")))

    def test_a_failed_link_changes_no_times_and_no_link_count(self):
        f, g = self.file("f"), self.file("g")
        with self.marks({f: "", self.root: ""}):
            self.assert_errno(errno.EEXIST, os.link, f, g)
        self.assertEqual(os.stat(f).st_nlink, 1)

    def test_a_destination_name_over_255_bytes_is_enametoolong(self):
        f = self.file("f")
        self.assert_errno(errno.ENAMETOOLONG, os.link, f, self.p(LONG))
        self.assertEqual(os.stat(f).st_nlink, 1)

    def test_without_write_permission_on_the_destination_directory_is_eacces(self):
        w = self.world()
        as_nobody(touch, os.path.join(w, "f"))
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, os.link, os.path.join(w, "f"),
                                 os.path.join(d, "g"))

    def test_another_users_file_follows_protected_hardlinks(self):
        w = self.world()
        f = self.file("w/f", b"root's", 0o600)
        with open("/proc/sys/fs/protected_hardlinks") as sysctl:
            protected = sysctl.read().strip() == "1"
        if protected:  # proc(5): only the owner (or one who may read and write it) may link
            self.assert_nobody_errno(errno.EPERM, os.link, f, os.path.join(w, "g"))
        else:
            as_nobody(os.link, f, os.path.join(w, "g"))
            self.assertEqual(os.stat(f).st_nlink, 2)

    def test_the_owner_may_link_their_own_file(self):
        w = self.world()
        as_nobody(touch, os.path.join(w, "f"))
        as_nobody(os.link, os.path.join(w, "f"), os.path.join(w, "g"))
        self.assertEqual(os.stat(os.path.join(w, "g")).st_nlink, 2)


# ---------------------------------------------------------------------------------------------
# symlink(2), symlinkat(2), readlink(2), path resolution through symlinks


class SymlinkTests:
    """symlink(2), symlinkat(2), readlink(2), following symlinks in paths."""

    def test_symlink_stores_the_target_text_for_readlink(self):
        os.symlink("some/where/else", self.p("link"))
        self.assertEqual(os.readlink(self.p("link")), "some/where/else")

    def test_a_symlink_is_a_link_whose_size_is_its_target_length(self):
        os.symlink("twelve bytes", self.p("link"))
        st = os.lstat(self.p("link"))
        self.assertTrue(stat.S_ISLNK(st.st_mode))
        self.assertEqual(st.st_size, 12)

    def test_a_dangling_symlink_is_allowed(self):
        os.symlink("nowhere", self.p("link"))
        self.assertTrue(os.path.islink(self.p("link")))
        self.assertFalse(os.path.exists(self.p("link")))

    def test_a_relative_target_resolves_from_the_links_directory(self):
        self.dir("d")
        self.file("d/f", b"beside the link")
        os.symlink("f", self.p("d", "link"))
        self.assertEqual(read_file(self.p("d", "link")), b"beside the link")

    def test_an_absolute_target_is_followed(self):
        f = self.file("f", b"absolute")
        os.symlink(f, self.p("link"))
        self.assertEqual(read_file(self.p("link")), b"absolute")

    def test_a_symlink_to_a_directory_is_followed_in_the_middle_of_paths(self):
        self.dir("d")
        self.file("d/f", b"through")
        os.symlink("d", self.p("dlink"))
        self.assertEqual(read_file(self.p("dlink", "f")), b"through")
        self.assertEqual(os.listdir(self.p("dlink") + "/"), ["f"])

    def test_symlink_gives_the_link_the_callers_effective_uid_and_gid(self):
        path = os.path.join(self.world(), "link")
        as_nobody(os.symlink, "target", path)
        st = os.lstat(path)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))

    def test_symlink_marks_the_new_links_times_and_the_parents_mtime_and_ctime(self):
        since = self.clock()
        with self.marks({self.root: "mc"}):
            os.symlink("target", self.p("link"))
        self.assert_times_since(self.p("link"), since)

    def test_a_symlink_has_its_own_stable_inode(self):
        f = self.file("f")
        os.symlink("f", self.p("link"))
        ino = os.lstat(self.p("link")).st_ino
        self.assertNotEqual(ino, os.stat(f).st_ino)
        os.rename(self.p("link"), self.p("moved"))
        self.assertEqual(os.lstat(self.p("moved")).st_ino, ino)

    def test_long_and_odd_targets_round_trip(self):
        for i, target in enumerate(["a" * 1000, "with space/and\nnewline", "ünïcødé/→",
                                    "../../..", "/absolute/path/"]):
            os.symlink(target, self.p(f"link{i}"))
            self.assertEqual(os.readlink(self.p(f"link{i}")), target)
            self.assertEqual(os.lstat(self.p(f"link{i}")).st_size, len(os.fsencode(target)))

    def test_an_existing_name_is_eexist(self):
        f = self.file("f")
        d = self.dir("d")
        link = self.symlink("nowhere", "link")
        for existing in (f, d, link):
            self.assert_errno(errno.EEXIST, os.symlink, "target", existing)
        self.assertEqual(os.readlink(link), "nowhere")

    def test_a_failed_symlink_changes_no_times_of_the_parent(self):
        f = self.file("f")
        with self.marks({self.root: ""}):
            self.assert_errno(errno.EEXIST, os.symlink, "target", f)

    def test_an_empty_target_is_enoent(self):
        self.assert_errno(errno.ENOENT, os.symlink, "", self.p("link"))

    def test_a_target_over_path_max_is_enametoolong(self):
        self.assert_errno(errno.ENAMETOOLONG, os.symlink, "t" * (PATH_MAX + 1), self.p("link"))

    def test_without_write_permission_on_the_parent_is_eacces(self):
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, os.symlink, "target", os.path.join(d, "link"))

    def test_readlink_of_a_regular_file_is_einval(self):
        self.assert_errno(errno.EINVAL, os.readlink, self.file("f"))

    def test_readlink_of_a_directory_is_einval(self):
        self.assert_errno(errno.EINVAL, os.readlink, self.dir("d"))

    def test_readlink_follows_symlinks_earlier_in_the_path(self):
        self.dir("d")
        os.symlink("inner target", self.p("d", "link"))
        os.symlink("d", self.p("dlink"))
        self.assertEqual(os.readlink(self.p("dlink", "link")), "inner target")

    def test_two_symlinks_pointing_at_each_other_are_eloop(self):
        loop = self.loop()
        self.assert_errno(errno.ELOOP, os.stat, loop)
        self.assertTrue(stat.S_ISLNK(os.lstat(loop).st_mode))

    def test_a_symlink_to_itself_is_eloop(self):
        self.symlink("self", "self")
        self.assert_errno(errno.ELOOP, os.stat, self.p("self"))

    def test_a_chain_of_40_symlinks_resolves_and_41_is_eloop(self):
        self.file("target", b"end of the chain")
        for i in range(41):
            os.symlink("target" if i == 40 else f"s{i + 1}", self.p(f"s{i}"))
        self.assertEqual(read_file(self.p("s1")), b"end of the chain")  # 40 links
        self.assert_errno(errno.ELOOP, os.stat, self.p("s0"))  # 41 links


# ---------------------------------------------------------------------------------------------
# chmod(2), fchmod(2)


class ChmodTests:
    """chmod(2), fchmod(2)."""

    def test_chmod_sets_the_permission_bits(self):
        f = self.file("f")
        for mode in (0o000, 0o777, 0o421, 0o640, 0o007):
            os.chmod(f, mode)
            self.assertEqual(mode_of(f), mode)

    def test_chmod_sets_setuid_setgid_and_sticky_bits(self):
        f = self.file("f")
        os.chmod(f, 0o7755)
        self.assertEqual(mode_of(f), 0o7755)
        d = self.dir("d")
        os.chmod(d, 0o3777)
        self.assertEqual(mode_of(d), 0o3777)

    def test_chmod_keeps_the_file_type(self):
        d = self.dir("d")
        os.chmod(d, 0o700)
        self.assertTrue(stat.S_ISDIR(os.stat(d).st_mode))

    def test_chmod_marks_ctime_only(self):
        f = self.file("f")
        with self.marks({f: "c", self.root: ""}):
            os.chmod(f, 0o600)

    def test_chmod_to_the_same_mode_still_marks_ctime(self):
        f = self.file("f", mode=0o644)
        with self.marks({f: "c"}):
            os.chmod(f, 0o644)

    def test_chmod_follows_symlinks(self):
        f = self.file("f", mode=0o644)
        link = self.symlink("f", "link")
        link_mode = mode_of(link)
        os.chmod(link, 0o600)
        self.assertEqual(mode_of(f), 0o600)
        self.assertEqual(mode_of(link), link_mode)

    def test_fchmod_sets_the_mode_and_marks_ctime(self):
        f = self.file("f")
        fd = self.opened(f, os.O_RDWR)
        with self.marks({f: "c"}):
            os.fchmod(fd, 0o640)
        self.assertEqual(stat.S_IMODE(os.fstat(fd).st_mode), 0o640)

    def test_fchmod_works_on_a_read_only_descriptor(self):
        f = self.file("f")
        fd = self.opened(f, os.O_RDONLY)
        os.fchmod(fd, 0o600)
        self.assertEqual(mode_of(f), 0o600)

    def test_the_owner_may_chmod_their_file(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        as_nobody(os.chmod, f, 0o604)
        self.assertEqual(mode_of(f), 0o604)

    def test_another_user_is_eperm(self):
        f = self.file("f", mode=0o666)
        self.assert_nobody_errno(errno.EPERM, os.chmod, f, 0o777)
        self.assertEqual(mode_of(f), 0o666)

    def test_a_failed_chmod_changes_no_times(self):
        f = self.file("f", mode=0o666)
        with self.marks({f: ""}):
            self.assert_nobody_errno(errno.EPERM, os.chmod, f, 0o777)

    def test_setgid_by_an_owner_outside_the_files_group_is_cleared(self):
        f = self.file("f", uid=NOBODY, gid=0)
        as_nobody(os.chmod, f, 0o2755)
        self.assertEqual(mode_of(f), 0o755)

    def test_the_new_mode_governs_access_at_once(self):
        d = self.dir("d", 0o700)
        self.file("d/f", b"x")
        self.assert_nobody_errno(errno.EACCES, os.stat, os.path.join(d, "f"))
        os.chmod(d, 0o755)
        self.assertEqual(as_nobody(os.stat, os.path.join(d, "f")).st_size, 1)

    def test_fchmod_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.fchmod, bad_fd(), 0o644)


# ---------------------------------------------------------------------------------------------
# chown(2), lchown(2), fchown(2)


class ChownTests:
    """chown(2), lchown(2), fchown(2)."""

    def test_chown_sets_owner_and_group(self):
        f = self.file("f")
        os.chown(f, NOBODY, OTHER_GROUP)
        st = os.stat(f)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))

    def test_minus_one_keeps_that_id(self):
        f = self.file("f", uid=NOBODY, gid=OTHER_GROUP)
        os.chown(f, -1, 4321)
        self.assertEqual((os.stat(f).st_uid, os.stat(f).st_gid), (NOBODY, 4321))
        os.chown(f, 4000, -1)
        self.assertEqual((os.stat(f).st_uid, os.stat(f).st_gid), (4000, 4321))

    def test_chown_marks_ctime_only(self):
        f = self.file("f")
        with self.marks({f: "c", self.root: ""}):
            os.chown(f, NOBODY, NOBODY)

    def test_chown_of_a_directory(self):
        d = self.dir("d")
        os.chown(d, NOBODY, OTHER_GROUP)
        st = os.stat(d)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))

    def test_chown_follows_symlinks(self):
        f = self.file("f")
        link = self.symlink("f", "link")
        os.chown(link, NOBODY, NOBODY)
        self.assertEqual(os.stat(f).st_uid, NOBODY)
        self.assertEqual(os.lstat(link).st_uid, 0)

    def test_lchown_changes_the_symlink_itself(self):
        f = self.file("f")
        link = self.symlink("f", "link")
        with self.marks({link: "c"}):
            os.lchown(link, NOBODY, OTHER_GROUP)
        st = os.lstat(link)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))
        self.assertEqual(os.stat(f).st_uid, 0)

    def test_fchown_sets_owner_and_marks_ctime(self):
        f = self.file("f")
        fd = self.opened(f)
        with self.marks({f: "c"}):
            os.fchown(fd, NOBODY, OTHER_GROUP)
        st = os.fstat(fd)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, OTHER_GROUP))

    def test_chown_clears_setuid_and_setgid_of_a_group_executable_file(self):
        f = self.file("f", mode=0o6755)
        os.chown(f, NOBODY, NOBODY)
        self.assertEqual(mode_of(f), 0o755)

    def test_chown_keeps_setgid_of_a_file_that_is_not_group_executable(self):
        f = self.file("f", mode=0o2644)
        os.chown(f, NOBODY, NOBODY)
        self.assertEqual(mode_of(f), 0o2644)

    def test_the_new_owner_gets_the_owner_permissions_at_once(self):
        f = self.file("f", b"now mine", 0o600)
        self.assert_nobody_errno(errno.EACCES, read_file, f)
        os.chown(f, NOBODY, -1)
        self.assertEqual(as_nobody(read_file, f), b"now mine")

    def test_the_owner_may_keep_the_same_ids(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        as_nobody(os.chown, f, NOBODY, NOBODY)
        as_nobody(os.chown, f, -1, -1)
        self.assertEqual(os.stat(f).st_uid, NOBODY)

    def test_the_owner_may_change_the_group_to_one_they_belong_to(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        as_user(os.chown, f, -1, OTHER_GROUP, groups=[OTHER_GROUP])
        self.assertEqual(os.stat(f).st_gid, OTHER_GROUP)

    def test_the_owner_changing_the_group_to_a_foreign_one_is_eperm(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        self.assert_nobody_errno(errno.EPERM, os.chown, f, -1, 0)
        self.assertEqual(os.stat(f).st_gid, NOBODY)

    def test_the_owner_giving_the_file_away_is_eperm(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        self.assert_nobody_errno(errno.EPERM, os.chown, f, 0, -1)
        self.assertEqual(os.stat(f).st_uid, NOBODY)

    def test_another_user_is_eperm(self):
        f = self.file("f", mode=0o666)
        self.assert_nobody_errno(errno.EPERM, os.chown, f, NOBODY, NOBODY)
        self.assertEqual(os.stat(f).st_uid, 0)

    def test_a_failed_chown_changes_no_times(self):
        f = self.file("f", mode=0o666)
        with self.marks({f: ""}):
            self.assert_nobody_errno(errno.EPERM, os.chown, f, NOBODY, NOBODY)

    def test_fchown_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.fchown, bad_fd(), 0, 0)


# ---------------------------------------------------------------------------------------------
# truncate(2), ftruncate(2)


class TruncateTests:
    """truncate(2), ftruncate(2)."""

    def test_truncate_shrinks_the_file(self):
        f = self.file("f", b"0123456789")
        os.truncate(f, 4)
        self.assertEqual(read_file(f), b"0123")
        self.assertEqual(os.stat(f).st_size, 4)

    def test_truncate_extends_with_zero_bytes(self):
        f = self.file("f", b"abc")
        os.truncate(f, 4096 + 10)
        self.assertEqual(read_file(f), b"abc" + bytes(4096 + 7))

    def test_truncate_to_zero_empties_the_file(self):
        f = self.file("f", b"abc")
        os.truncate(f, 0)
        self.assertEqual(read_file(f), b"")

    def test_shrinking_marks_mtime_and_ctime(self):
        f = self.file("f", b"0123456789")
        with self.marks({f: "mc", self.root: ""}):
            os.truncate(f, 3)

    def test_extending_marks_mtime_and_ctime(self):
        f = self.file("f", b"0123456789")
        with self.marks({f: "mc"}):
            os.truncate(f, 100)

    def test_truncate_keeps_the_inode_mode_and_owner(self):
        f = self.file("f", b"0123456789", 0o640, uid=NOBODY, gid=OTHER_GROUP)
        ino = os.stat(f).st_ino
        os.truncate(f, 2)
        st = os.stat(f)
        self.assertEqual((st.st_ino, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid),
                         (ino, 0o640, NOBODY, OTHER_GROUP))

    def test_truncate_follows_symlinks(self):
        f = self.file("f", b"0123456789")
        link = self.symlink("f", "link")
        os.truncate(link, 5)
        self.assertEqual(os.stat(f).st_size, 5)
        self.assertTrue(os.path.islink(link))

    def test_ftruncate_shrinks_and_extends_through_a_descriptor(self):
        f = self.file("f", b"0123456789")
        fd = self.opened(f, os.O_RDWR)
        os.ftruncate(fd, 3)
        self.assertEqual(os.pread(fd, 100, 0), b"012")
        os.ftruncate(fd, 6)
        self.assertEqual(os.pread(fd, 100, 0), b"012" + bytes(3))

    def test_ftruncate_marks_mtime_and_ctime(self):
        f = self.file("f", b"0123456789")
        fd = self.opened(f, os.O_RDWR)
        with self.marks({f: "mc"}):
            os.ftruncate(fd, 1)

    def test_ftruncate_size_shows_through_stat_and_other_descriptors(self):
        f = self.file("f", b"0123456789")
        other = self.opened(f)
        fd = self.opened(f, os.O_WRONLY)
        os.ftruncate(fd, 7)
        self.assertEqual(os.stat(f).st_size, 7)
        self.assertEqual(os.fstat(other).st_size, 7)
        self.assertEqual(os.pread(other, 100, 0), b"0123456")

    def test_another_user_with_write_permission_may_truncate(self):
        f = self.file("f", b"0123456789", 0o666)
        as_nobody(os.truncate, f, 2)
        self.assertEqual(read_file(f), b"01")

    def test_without_write_permission_is_eacces(self):
        f = self.file("f", b"0123456789", 0o644)
        self.assert_nobody_errno(errno.EACCES, os.truncate, f, 2)
        self.assertEqual(os.stat(f).st_size, 10)

    def test_a_failed_truncate_changes_no_times(self):
        f = self.file("f", b"0123456789", 0o644)
        with self.marks({f: ""}):
            self.assert_nobody_errno(errno.EACCES, os.truncate, f, 2)

    def test_a_directory_is_eisdir(self):
        self.assert_errno(errno.EISDIR, os.truncate, self.dir("d"), 0)

    def test_a_negative_length_is_einval(self):
        f = self.file("f", b"abc")
        self.assert_errno(errno.EINVAL, os.truncate, f, -1)
        fd = self.opened(f, os.O_RDWR)
        self.assert_errno(errno.EINVAL, os.ftruncate, fd, -1)
        self.assertEqual(read_file(f), b"abc")

    def test_ftruncate_of_a_read_only_descriptor_is_einval_or_ebadf(self):
        fd = self.opened(self.file("f", b"abc"), os.O_RDONLY)
        self.assert_errno((errno.EINVAL, errno.EBADF), os.ftruncate, fd, 0)

    def test_ftruncate_of_a_directory_descriptor_is_einval_or_ebadf(self):
        fd = self.opened(self.dir("d"), os.O_RDONLY)
        self.assert_errno((errno.EINVAL, errno.EBADF), os.ftruncate, fd, 0)

    def test_ftruncate_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.ftruncate, bad_fd(), 0)


# ---------------------------------------------------------------------------------------------
# utimensat(2), futimens(3) (os.utime with ns= and follow_symlinks)


T1 = 1_500_000_000_123_456_789
T2 = 1_600_000_000_987_654_321


class UtimeTests:
    """utimensat(2), futimens(3): os.utime with ns= and follow_symlinks."""

    def test_explicit_times_are_kept_to_the_nanosecond(self):
        f = self.file("f")
        os.utime(f, ns=(T1, T2))
        st = os.stat(f)
        self.assertEqual((st.st_atime_ns, st.st_mtime_ns), (T1, T2))

    def test_explicit_times_mark_ctime(self):
        f = self.file("f")
        since = self.clock()
        os.utime(f, ns=(T1, T2))
        self.assert_times_since(f, since, "c")

    def test_times_past_2038_are_kept(self):
        f = self.file("f")
        later = 4_102_444_800 * 10**9 + 5  # 2100-01-01
        os.utime(f, ns=(later, later))
        self.assertEqual(os.stat(f).st_mtime_ns, later)

    def test_null_times_set_atime_mtime_and_ctime_to_now(self):
        f = self.file("f")
        os.utime(f, ns=(T1, T2))
        since = self.clock()
        os.utime(f)
        self.assert_times_since(f, since)

    def test_utime_now_for_one_and_utime_omit_for_the_other(self):
        f = self.file("f")
        os.utime(f, ns=(T1, T2))
        since = self.clock()
        utimensat(f, NOW, OMIT)
        self.assert_times_since(f, since, "ac")
        self.assertEqual(os.stat(f).st_mtime_ns, T2)
        utimensat(f, OMIT, T1)
        self.assertEqual(os.stat(f).st_mtime_ns, T1)
        self.assertGreaterEqual(os.stat(f).st_atime_ns, since)

    def test_utime_omit_for_both_changes_nothing(self):
        f = self.file("f")
        os.utime(f, ns=(T1, T2))
        with self.marks({f: ""}):
            utimensat(f, OMIT, OMIT)

    def test_not_following_symlinks_sets_the_links_own_times(self):
        f = self.file("f")
        link = self.symlink("f", "link")
        target = times(f)
        os.utime(link, ns=(T1, T2), follow_symlinks=False)
        st = os.lstat(link)
        self.assertEqual((st.st_atime_ns, st.st_mtime_ns), (T1, T2))
        self.assertEqual(times(f), target)

    def test_following_symlinks_sets_the_targets_times(self):
        f = self.file("f")
        link = self.symlink("f", "link")
        os.utime(link, ns=(T1, T2), follow_symlinks=True)
        self.assertEqual(os.stat(f).st_mtime_ns, T2)
        self.assertNotEqual(os.lstat(link).st_mtime_ns, T2)

    def test_futimens_sets_times_through_a_descriptor(self):
        f = self.file("f")
        fd = self.opened(f)
        since = self.clock()
        os.utime(fd, ns=(T1, T2))
        st = os.stat(f)
        self.assertEqual((st.st_atime_ns, st.st_mtime_ns), (T1, T2))
        self.assert_times_since(f, since, "c")

    def test_a_directorys_times_can_be_set(self):
        d = self.dir("d")
        os.utime(d, ns=(T1, T2))
        st = os.stat(d)
        self.assertEqual((st.st_atime_ns, st.st_mtime_ns), (T1, T2))

    def test_the_owner_may_set_explicit_times(self):
        f = self.file("f", uid=NOBODY, gid=NOBODY)
        as_nobody(lambda: os.utime(f, ns=(T1, T2)))
        self.assertEqual(os.stat(f).st_mtime_ns, T2)

    def test_another_user_with_write_permission_may_set_times_to_now(self):
        f = self.file("f", mode=0o666)
        os.utime(f, ns=(T1, T2))
        since = self.clock()
        as_nobody(os.utime, f)
        self.assert_times_since(f, since)

    def test_another_user_without_write_permission_setting_now_is_eacces(self):
        f = self.file("f", mode=0o644)
        os.utime(f, ns=(T1, T2))
        self.assert_nobody_errno(errno.EACCES, os.utime, f)
        self.assertEqual(os.stat(f).st_mtime_ns, T2)

    def test_another_user_setting_explicit_times_is_eperm(self):
        f = self.file("f", mode=0o666)
        self.assert_nobody_errno(errno.EPERM, lambda: os.utime(f, ns=(T1, T2)))
        self.assertNotEqual(os.stat(f).st_mtime_ns, T2)

    def test_an_invalid_nanosecond_field_is_einval(self):
        f = self.file("f")
        self.assert_errno(errno.EINVAL, utimensat, f, ("special", 10**9), OMIT)

    def test_futimens_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.utime, bad_fd(), ns=(T1, T2))


# ---------------------------------------------------------------------------------------------
# mknod(2), mkfifo(3)


class MknodTests:
    """mknod(2), mkfifo(3)."""

    def test_mkfifo_makes_a_fifo_with_mode_masked_by_umask(self):
        os.mkfifo(self.p("fifo"), 0o666)
        st = os.lstat(self.p("fifo"))
        self.assertTrue(stat.S_ISFIFO(st.st_mode))
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_nlink, st.st_size), (0o644, 1, 0))

    def test_mkfifo_marks_the_new_nodes_times_and_the_parents_mtime_and_ctime(self):
        since = self.clock()
        with self.marks({self.root: "mc"}):
            os.mkfifo(self.p("fifo"))
        self.assert_times_since(self.p("fifo"), since)

    def test_a_fifo_passes_bytes_from_a_writer_to_a_reader(self):
        os.mkfifo(self.p("fifo"))
        r = self.opened(self.p("fifo"), os.O_RDONLY | os.O_NONBLOCK)
        w = self.opened(self.p("fifo"), os.O_WRONLY)
        os.write(w, b"through the pipe")
        self.assertEqual(os.read(r, 100), b"through the pipe")

    def test_mkfifo_gives_the_fifo_the_callers_effective_uid_and_gid(self):
        path = os.path.join(self.world(), "fifo")
        as_nobody(os.mkfifo, path)
        st = os.lstat(path)
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))

    def test_mknod_makes_a_fifo(self):
        os.mknod(self.p("fifo"), stat.S_IFIFO | 0o600)
        st = os.lstat(self.p("fifo"))
        self.assertTrue(stat.S_ISFIFO(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)

    def test_mknod_makes_a_regular_file(self):
        os.mknod(self.p("f"), stat.S_IFREG | 0o640)
        st = os.lstat(self.p("f"))
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_size), (0o640, 0))

    def test_mknod_with_no_type_makes_a_regular_file(self):
        os.mknod(self.p("f"), 0o600)
        self.assertTrue(stat.S_ISREG(os.lstat(self.p("f")).st_mode))

    def test_mknod_makes_a_socket_node(self):
        os.mknod(self.p("sock"), stat.S_IFSOCK | 0o600)
        self.assertTrue(stat.S_ISSOCK(os.lstat(self.p("sock")).st_mode))

    def test_mknod_makes_a_character_device_with_its_number(self):
        os.mknod(self.p("null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        st = os.lstat(self.p("null"))
        self.assertTrue(stat.S_ISCHR(st.st_mode))
        self.assertEqual((os.major(st.st_rdev), os.minor(st.st_rdev)), (1, 3))

    def test_mknod_makes_a_block_device_with_its_number(self):
        os.mknod(self.p("blk"), stat.S_IFBLK | 0o600, os.makedev(7, 42))
        st = os.lstat(self.p("blk"))
        self.assertTrue(stat.S_ISBLK(st.st_mode))
        self.assertEqual((os.major(st.st_rdev), os.minor(st.st_rdev)), (7, 42))

    def test_a_fifo_can_be_renamed_and_unlinked(self):
        os.mkfifo(self.p("fifo"))
        ino = os.lstat(self.p("fifo")).st_ino
        os.rename(self.p("fifo"), self.p("pipe"))
        self.assertEqual(os.lstat(self.p("pipe")).st_ino, ino)
        os.unlink(self.p("pipe"))
        self.assertEqual(os.listdir(self.root), [])

    def test_a_device_by_an_unprivileged_user_is_eperm(self):
        w = self.world()
        self.assert_nobody_errno(errno.EPERM, os.mknod, os.path.join(w, "null"),
                                 stat.S_IFCHR | 0o666, os.makedev(1, 3))

    def test_the_directory_type_is_eperm(self):
        self.assert_errno(errno.EPERM, os.mknod, self.p("d"), stat.S_IFDIR | 0o755)

    def test_an_invalid_type_is_einval(self):
        self.assert_errno(errno.EINVAL, os.mknod, self.p("x"), stat.S_IFLNK | 0o777)

    def test_an_existing_name_is_eexist(self):
        f = self.file("f")
        self.assert_errno(errno.EEXIST, os.mkfifo, f)
        self.assert_errno(errno.EEXIST, os.mknod, f, stat.S_IFIFO | 0o644)
        self.assertTrue(stat.S_ISREG(os.lstat(f).st_mode))

    def test_without_write_permission_on_the_parent_is_eacces(self):
        d = self.dir("d", 0o755)
        self.assert_nobody_errno(errno.EACCES, os.mkfifo, os.path.join(d, "fifo"))


# ---------------------------------------------------------------------------------------------
# stat(2), lstat(2), fstat(2), fstatat(2)


class StatTests:
    """stat(2), lstat(2), fstat(2), fstatat(2)."""

    def test_stat_of_a_regular_file(self):
        f = self.file("f", b"12345", 0o640, uid=NOBODY, gid=OTHER_GROUP)
        st = os.stat(f)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_size, st.st_nlink, st.st_uid,
                          st.st_gid), (0o640, 5, 1, NOBODY, OTHER_GROUP))

    def test_a_directorys_nlink_counts_its_subdirectories(self):
        d = self.dir("d")
        for name in ("a", "b", "c"):
            self.dir(f"d/{name}")
        self.assertEqual(os.stat(d).st_nlink, 5)
        os.rmdir(os.path.join(d, "b"))
        self.assertEqual(os.stat(d).st_nlink, 4)

    def test_a_directorys_nlink_ignores_files_and_symlinks(self):
        d = self.dir("d")
        self.file("d/f")
        self.symlink("f", "d/link")
        self.assertEqual(os.stat(d).st_nlink, 2)

    def test_the_inode_number_is_stable_across_chmod_writes_and_renames(self):
        f = self.file("f", b"one")
        ino = os.stat(f).st_ino
        os.chmod(f, 0o600)
        write_file(f, b"two")
        with open(f, "ab") as out:
            out.write(b"three")
        os.rename(f, self.p("g"))
        self.assertEqual(os.stat(self.p("g")).st_ino, ino)
        self.assertEqual(os.stat(self.p("g")).st_ino, ino)

    def test_different_files_have_different_inode_numbers(self):
        paths = [self.file(f"f{i}") for i in range(5)] + [self.dir(f"d{i}") for i in range(5)]
        paths.append(self.symlink("f0", "link"))
        self.assertEqual(len({os.lstat(p).st_ino for p in paths}), len(paths))

    def test_every_object_shares_the_directorys_device_number(self):
        dev = os.stat(self.root).st_dev
        for p in (self.file("f"), self.dir("d"), self.symlink("f", "link")):
            self.assertEqual(os.lstat(p).st_dev, dev, self.rel(p))

    def test_fstat_matches_stat(self):
        f = self.file("f", b"abc", 0o604)
        fd = self.opened(f)
        a, b = os.stat(f), os.fstat(fd)
        for field in ("st_ino", "st_dev", "st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                      "st_mtime_ns", "st_ctime_ns"):
            self.assertEqual(getattr(a, field), getattr(b, field), field)

    def test_lstat_describes_the_link_and_stat_its_target(self):
        f = self.file("f", b"0123456789")
        link = self.symlink("f", "link")
        self.assertTrue(stat.S_ISLNK(os.lstat(link).st_mode))
        self.assertEqual(os.lstat(link).st_size, 1)
        self.assertEqual(os.stat(link).st_ino, os.stat(f).st_ino)
        self.assertEqual(os.stat(link).st_size, 10)

    def test_dot_and_dotdot_resolve_to_the_directory_and_its_parent(self):
        d = self.dir("d")
        self.dir("d/sub")
        self.assertEqual(os.stat(os.path.join(d, ".")).st_ino, os.stat(d).st_ino)
        self.assertEqual(os.stat(os.path.join(d, "sub", "..")).st_ino, os.stat(d).st_ino)

    def test_st_blocks_count_written_data(self):
        f = self.file("f", os.urandom(64 * 1024))
        self.assertGreater(os.stat(f).st_blocks, 0)

    def test_st_blksize_is_positive(self):
        self.assertGreater(os.stat(self.file("f", b"x")).st_blksize, 0)

    def test_a_new_files_times_are_the_time_of_its_creation(self):
        since = self.clock()
        f = self.file("f", b"x")
        self.assert_times_since(f, since)

    def test_stat_marks_no_times(self):
        f = self.file("f", b"x")
        with self.marks({f: "", self.root: ""}):
            for _ in range(3):
                os.stat(f)
                os.lstat(f)

    def test_a_dangling_symlink_is_enoent_for_stat_but_not_lstat(self):
        link = self.symlink("nowhere", "link")
        self.assert_errno(errno.ENOENT, os.stat, link)
        self.assertTrue(stat.S_ISLNK(os.lstat(link).st_mode))

    def test_a_symlink_loop_is_eloop_for_stat_but_not_lstat(self):
        loop = self.loop()
        self.assert_errno(errno.ELOOP, os.stat, loop)
        self.assertTrue(stat.S_ISLNK(os.lstat(loop).st_mode))

    def test_fstat_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.fstat, bad_fd())


# ---------------------------------------------------------------------------------------------
# access(2), faccessat(2)


class AccessTests:
    """access(2), faccessat(2) (through libc: os.access hides the errno)."""

    def test_f_ok_answers_whether_the_name_exists(self):
        faccessat(self.file("f"), os.F_OK)
        self.assert_errno(errno.ENOENT, faccessat, self.p("missing"), os.F_OK)

    def test_root_may_read_and_write_a_file_of_mode_0(self):
        f = self.file("f", mode=0o000)
        faccessat(f, os.R_OK | os.W_OK)

    def test_root_needs_some_execute_bit_to_execute_a_file(self):
        f = self.file("f", mode=0o644)
        self.assert_errno(errno.EACCES, faccessat, f, os.X_OK)
        os.chmod(f, 0o001)
        faccessat(f, os.X_OK)

    def test_root_may_search_a_directory_of_mode_0(self):
        faccessat(self.dir("d", 0o000), os.X_OK)

    def test_the_owner_bits_decide_for_the_owner(self):
        f = self.file("f", mode=0o470, uid=NOBODY, gid=NOBODY)
        as_nobody(faccessat, f, os.R_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.W_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.X_OK)

    def test_the_group_bits_decide_for_a_member(self):
        f = self.file("f", mode=0o027, uid=0, gid=NOBODY)
        as_nobody(faccessat, f, os.W_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.R_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.X_OK)

    def test_the_other_bits_decide_for_other_users(self):
        f = self.file("f", mode=0o771, uid=0, gid=0)
        as_nobody(faccessat, f, os.X_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.R_OK)
        self.assert_nobody_errno(errno.EACCES, faccessat, f, os.R_OK | os.X_OK)

    def test_w_ok_on_a_directory_follows_its_mode(self):
        self.assert_nobody_errno(errno.EACCES, faccessat, self.dir("d", 0o755), os.W_OK)
        as_nobody(faccessat, self.world(), os.W_OK | os.X_OK)

    def test_access_follows_symlinks(self):
        self.file("f", mode=0o600)
        link = self.symlink("f", "link")
        self.assert_nobody_errno(errno.EACCES, faccessat, link, os.R_OK)

    def test_access_checks_the_real_not_the_effective_uid(self):
        f = self.file("f", b"root only", 0o600)
        as_user(faccessat, f, os.R_OK, effective_only=True)  # the real uid is root
        self.assert_errno(errno.EACCES, as_user, faccessat, f, os.R_OK, True,
                          effective_only=True)  # AT_EACCESS: the effective one

    def test_an_invalid_mode_is_einval(self):
        self.assert_errno(errno.EINVAL, faccessat, self.file("f"), 0o10)


# ---------------------------------------------------------------------------------------------
# opendir(3)/readdir(3) through os.scandir and os.listdir


class ReaddirTests:
    """opendir(3)/readdir(3) through os.listdir and os.scandir."""

    def test_a_new_directory_lists_no_names(self):
        self.assertEqual(os.listdir(self.dir("d")), [])

    def test_every_name_is_listed_once_without_dot_entries(self):
        names = {f"f{i}" for i in range(40)} | {f"d{i}" for i in range(10)}
        for name in names:
            (self.dir if name.startswith("d") else self.file)(name)
        listed = os.listdir(self.root)
        self.assertEqual(len(listed), len(set(listed)))
        self.assertEqual(set(listed), names)

    def test_a_thousand_names_are_all_listed(self):
        names = {f"entry-{i:04d}" for i in range(1000)}
        for name in names:
            touch(self.p(name))
        self.assertEqual(set(os.listdir(self.root)), names)

    def test_scandir_types_match_lstat(self):
        self.file("f")
        self.dir("d")
        self.symlink("f", "link")
        self.symlink("d", "dlink")
        os.mkfifo(self.p("fifo"))
        with os.scandir(self.root) as it:
            entries = {e.name: e for e in it}
        self.assertEqual(set(entries), {"f", "d", "link", "dlink", "fifo"})
        for name, entry in entries.items():
            st = os.lstat(self.p(name))
            self.assertEqual(entry.is_dir(follow_symlinks=False), stat.S_ISDIR(st.st_mode), name)
            self.assertEqual(entry.is_file(follow_symlinks=False), stat.S_ISREG(st.st_mode), name)
            self.assertEqual(entry.is_symlink(), stat.S_ISLNK(st.st_mode), name)
        self.assertTrue(entries["dlink"].is_dir())

    def test_scandir_inode_numbers_match_lstat(self):
        for name in ("a", "b", "c"):
            self.file(name)
        self.dir("d")
        with os.scandir(self.root) as it:
            for entry in it:
                self.assertEqual(entry.inode(), os.lstat(entry.path).st_ino, entry.name)

    def test_the_listing_follows_creates_renames_and_unlinks(self):
        for name in ("a", "b", "c"):
            self.file(name)
        self.assertEqual(sorted(os.listdir(self.root)), ["a", "b", "c"])
        os.rename(self.p("a"), self.p("z"))
        os.unlink(self.p("b"))
        self.dir("d")
        self.assertEqual(sorted(os.listdir(self.root)), ["c", "d", "z"])

    def test_names_of_255_bytes_and_odd_characters_are_listed(self):
        names = {"y" * NAME_MAX, "with space", "new\nline", "ünïcødé", "-dash", ".hidden",
                 "a" * 100 + "é" * 77}  # 254 bytes
        for name in names:
            touch(self.p(name))
        self.assertEqual(set(os.listdir(self.root)), names)

    def test_a_listing_through_a_descriptor(self):
        d = self.dir("d")
        self.file("d/f")
        fd = self.opened(d, os.O_RDONLY | os.O_DIRECTORY)
        self.assertEqual(os.listdir(fd), ["f"])
        with os.scandir(fd) as it:
            self.assertEqual([e.name for e in it], ["f"])

    def test_listing_marks_atime_unless_mounted_noatime(self):
        d = self.dir("d")
        self.file("d/f")
        old = time.time_ns() - 3 * 86400 * 10**9
        os.utime(d, ns=(old, old))
        os.listdir(d)
        atime = os.stat(d).st_atime_ns
        if self.atime_on_access(d):
            self.assertGreater(atime, old, "readdir did not mark atime (the mount is not noatime)")
        else:
            self.assertEqual(atime, old)

    def test_listing_marks_neither_mtime_nor_ctime(self):
        d = self.dir("d")
        self.file("d/f")
        before = times(d)
        time.sleep(TICK)
        os.listdir(d)
        after = times(d)
        self.assertEqual((after.mtime, after.ctime), (before.mtime, before.ctime))

    def test_listing_a_file_is_enotdir(self):
        self.assert_errno(errno.ENOTDIR, os.listdir, self.file("f"))

    def test_listing_without_read_permission_is_eacces(self):
        d = self.dir("d", 0o711)
        self.file("d/f", b"reachable")
        self.assert_nobody_errno(errno.EACCES, os.listdir, d)

    def test_names_stay_reachable_with_search_but_no_read_permission(self):
        d = self.dir("d", 0o711)
        self.file("d/f", b"reachable")
        self.assertEqual(as_nobody(read_file, os.path.join(d, "f")), b"reachable")


# ---------------------------------------------------------------------------------------------
# statvfs(3), fstatvfs(3)


class StatvfsTests:
    """statvfs(3), fstatvfs(3)."""

    def test_block_counts_are_consistent(self):
        sv = os.statvfs(self.root)
        self.assertGreater(sv.f_bsize, 0)
        self.assertGreater(sv.f_frsize, 0)
        self.assertGreater(sv.f_blocks, 0)
        self.assertLessEqual(sv.f_bfree, sv.f_blocks)
        self.assertLessEqual(sv.f_bavail, sv.f_bfree)

    def test_file_counts_are_consistent(self):
        sv = os.statvfs(self.root)
        self.assertLessEqual(sv.f_ffree, sv.f_files)
        self.assertLessEqual(sv.f_favail, sv.f_ffree)

    def test_name_max_is_the_longest_name_that_works(self):
        sv = os.statvfs(self.root)
        self.assertEqual(sv.f_namemax, NAME_MAX)
        self.assertEqual(os.pathconf(self.root, "PC_NAME_MAX"), NAME_MAX)
        touch(self.p("y" * sv.f_namemax))
        self.assert_errno(errno.ENAMETOOLONG, touch, self.p("y" * (sv.f_namemax + 1)))

    def test_fstatvfs_matches_statvfs(self):
        fd = self.opened(self.file("f", b"x"))
        a, b = os.statvfs(self.root), os.fstatvfs(fd)
        for field in ("f_bsize", "f_frsize", "f_blocks", "f_namemax", "f_fsid"):
            self.assertEqual(getattr(a, field), getattr(b, field), field)

    def test_a_file_and_a_directory_report_the_same_file_system(self):
        a, b = os.statvfs(self.file("f")), os.statvfs(self.dir("d"))
        for field in ("f_bsize", "f_frsize", "f_blocks", "f_namemax", "f_fsid"):
            self.assertEqual(getattr(a, field), getattr(b, field), field)

    def test_fstatvfs_of_a_closed_descriptor_is_ebadf(self):
        self.assert_errno(errno.EBADF, os.fstatvfs, bad_fd())


# ---------------------------------------------------------------------------------------------
# path_resolution(7): the errors that every call taking a path shares


def source_in(directory):
    """A fresh file in directory for rename or link to move or link; returns its path."""
    path = os.path.join(directory, "src-" + os.urandom(6).hex())
    touch(path)
    return path


CREATE, FOLLOW, NOFOLLOW = "create", "follow", "nofollow"


class PathResolutionTests:
    """ENOENT, ENOTDIR, ENAMETOOLONG, ELOOP, EACCES and EBADF from resolving a path, checked
    for every call that takes one (one subTest per call)."""

    def path_calls(self):
        """(name, kind, fn(path)) for every call that takes a path. kind is how the call
        treats the last component: CREATE (it may be missing), FOLLOW (a symlink there is
        followed) or NOFOLLOW. rename and link move or link a fresh file from a
        world-writable directory, so that uid 65534 can run them too."""
        sources = self.p("sources")
        if not os.path.isdir(sources):
            self.world("sources")
        dst = os.path.join(sources, "dst")
        return [
            ("open(O_CREAT)", CREATE, lambda p: os.close(os.open(p, os.O_CREAT | os.O_WRONLY))),
            ("mkdir", CREATE, os.mkdir),
            ("mknod", CREATE, lambda p: os.mknod(p, stat.S_IFREG | 0o644)),
            ("mkfifo", CREATE, os.mkfifo),
            ("symlink", CREATE, lambda p: os.symlink("target", p)),
            ("link to", CREATE, lambda p: os.link(source_in(sources), p)),
            ("rename to", CREATE, lambda p: os.rename(source_in(sources), p)),
            ("link from", NOFOLLOW, lambda p: os.link(p, dst)),
            ("rename from", NOFOLLOW, lambda p: os.rename(p, dst)),
            ("rmdir", NOFOLLOW, os.rmdir),
            ("unlink", NOFOLLOW, os.unlink),
            ("readlink", NOFOLLOW, os.readlink),
            ("lstat", NOFOLLOW, os.lstat),
            ("lchown", NOFOLLOW, lambda p: os.lchown(p, -1, -1)),
            ("utimensat(AT_SYMLINK_NOFOLLOW)", NOFOLLOW,
             lambda p: os.utime(p, ns=(T1, T2), follow_symlinks=False)),
            ("open", FOLLOW, lambda p: os.close(os.open(p, os.O_RDONLY))),
            ("stat", FOLLOW, os.stat),
            ("access", FOLLOW, lambda p: faccessat(p, os.F_OK)),
            ("chmod", FOLLOW, lambda p: os.chmod(p, 0o644)),
            ("chown", FOLLOW, lambda p: os.chown(p, -1, -1)),
            ("truncate", FOLLOW, lambda p: os.truncate(p, 0)),
            ("utimensat", FOLLOW, lambda p: os.utime(p, ns=(T1, T2))),
            ("opendir", FOLLOW, os.listdir),
            ("statvfs", FOLLOW, os.statvfs),
        ]

    def at_calls(self):
        """(name, fn(dirfd)) for the *at() calls, each on the name "x"."""
        src = source_in(self.world("sources"))

        def openat(fd):
            os.close(os.open("x", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))

        return [
            ("openat", openat),
            ("mkdirat", lambda fd: os.mkdir("x", dir_fd=fd)),
            ("mknodat", lambda fd: os.mknod("x", stat.S_IFREG | 0o644, dir_fd=fd)),
            ("mkfifoat", lambda fd: os.mkfifo("x", dir_fd=fd)),
            ("symlinkat", lambda fd: os.symlink("target", "x", dir_fd=fd)),
            ("linkat", lambda fd: os.link(src, "x", dst_dir_fd=fd)),
            ("renameat", lambda fd: os.rename(src, "x", dst_dir_fd=fd)),
            ("unlinkat", lambda fd: os.unlink("x", dir_fd=fd)),
            ("unlinkat(AT_REMOVEDIR)", lambda fd: os.rmdir("x", dir_fd=fd)),
            ("readlinkat", lambda fd: os.readlink("x", dir_fd=fd)),
            ("fchmodat", lambda fd: os.chmod("x", 0o644, dir_fd=fd)),
            ("fchownat", lambda fd: os.chown("x", -1, -1, dir_fd=fd)),
            ("utimensat", lambda fd: os.utime("x", ns=(T1, T2), dir_fd=fd)),
            ("fstatat", lambda fd: os.stat("x", dir_fd=fd)),
        ]

    def assert_every_call(self, codes, path, kinds=(CREATE, FOLLOW, NOFOLLOW), nobody=False):
        """Each call of a kind in `kinds` fails with `codes` on `path` (a path, or a function
        of the kind that returns one)."""
        for name, kind, fn in self.path_calls():
            if kind not in kinds:
                continue
            where = path(kind) if callable(path) else path
            with self.subTest(call=name):
                if nobody:
                    self.assert_errno(codes, as_nobody, fn, where)
                else:
                    self.assert_errno(codes, fn, where)

    def test_a_missing_name_is_enoent(self):
        self.assert_every_call(errno.ENOENT, self.p("missing"), kinds=(FOLLOW, NOFOLLOW))

    def test_a_missing_directory_is_enoent(self):
        self.assert_every_call(errno.ENOENT, self.p("missing", "x"))

    def test_a_dangling_symlink_as_a_directory_is_enoent(self):
        self.symlink("missing", "dangling")
        self.assert_every_call(errno.ENOENT, self.p("dangling", "x"))

    def test_an_empty_path_is_enoent(self):
        self.assert_every_call(errno.ENOENT, "")

    def test_a_file_as_a_directory_is_enotdir(self):
        f = self.file("f")
        self.assert_every_call(errno.ENOTDIR, os.path.join(f, "x"))

    def test_a_name_over_255_bytes_is_enametoolong(self):
        self.assert_every_call(errno.ENAMETOOLONG, self.p(LONG))
        self.assertNotIn(LONG, os.listdir(self.root))

    def test_a_name_over_255_bytes_inside_a_directory_is_enametoolong(self):
        self.dir("d")
        self.assert_every_call(errno.ENAMETOOLONG, self.p("d", LONG, "x"))

    def test_a_path_over_path_max_is_enametoolong(self):
        self.file("f")
        self.assert_every_call(errno.ENAMETOOLONG, self.root + "/" + "./" * (PATH_MAX // 2) + "f")

    def test_a_symlink_loop_in_the_path_is_eloop(self):
        self.assert_every_call(errno.ELOOP, os.path.join(self.loop(), "x"))

    def test_a_symlink_loop_as_the_last_component_is_eloop(self):
        self.assert_every_call(errno.ELOOP, self.loop(), kinds=(FOLLOW,))

    def test_a_directory_without_search_permission_is_eacces(self):
        locked = self.locked()
        self.assert_every_call(
            errno.EACCES, lambda kind: os.path.join(locked, "d", "new") if kind == CREATE
            else os.path.join(locked, "f"), nobody=True)

    def test_a_bad_directory_descriptor_is_ebadf(self):
        calls = self.at_calls()
        fd = bad_fd()
        for name, fn in calls:
            with self.subTest(call=name):
                self.assert_errno(errno.EBADF, fn, fd)

    def test_a_file_as_the_directory_descriptor_is_enotdir(self):
        fd = self.opened(self.file("f"))
        for name, fn in self.at_calls():
            with self.subTest(call=name):
                self.assert_errno(errno.ENOTDIR, fn, fd)


# ---------------------------------------------------------------------------------------------
# One concrete TestCase per family and target: OpenOnControl, OpenOnWeft, ...

FAMILIES = (OpenTests, ReadWriteTests, MkdirTests, RmdirTests, UnlinkTests, RenameTests,
            LinkTests, SymlinkTests, ChmodTests, ChownTests, TruncateTests, UtimeTests,
            MknodTests, StatTests, AccessTests, ReaddirTests, StatvfsTests,
            PathResolutionTests)


def _pair(family):
    stem = family.__name__.removesuffix("Tests")
    for target in (ControlTarget, WeftTarget):
        name = f"{stem}On{target.label}"
        globals()[name] = type(name, (family, target), {"__module__": __name__,
                                                        "__qualname__": name,
                                                        "__doc__": f"{stem} on {target.label}."})


for _family in FAMILIES:
    _pair(_family)
del _family

if __name__ == "__main__":
    unittest.main()
