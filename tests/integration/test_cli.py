"""The `weft` command line end to end: put/get trees, stdin, snapshots, versions, namespace
commands with --json, bad paths, usage errors, and the data-directory lock."""

import hashlib
import json
import os
import pty
import subprocess
import time
import unittest

from weftlib import MIB, WeftTestCase, incompressible, read_bytes, tree_digests

BAD_PATHS = ["/a/../b", "/a/./b", "/a//b", "/" + "n" * 256, "/ok/" + "x" * 256 + "/c", ".."]


class PutGetTest(WeftTestCase):
    def test_tree_roundtrip_is_byte_identical(self):
        src = self.generate("src", kind="mixed", size=12 * MIB)
        # Edge cases a generator does not make: empty file, empty directory, odd names.
        self.write_file("src/edge/empty.bin", b"")
        os.makedirs(self.path("src/edge/empty-dir"))
        self.write_file("src/edge/name with spaces & ünïcode.txt", b"hello\n")
        self.write_file("src/edge/exactly-1MiB.bin", incompressible("1m", MIB))
        self.write_file("src/edge/1MiB-plus-1.bin", incompressible("1m1", MIB + 1))

        self.weft("put", src, "/ds")  # /ds does not exist: src's contents become /ds
        self.weft("get", "/ds", self.path("out"))
        self.assertEqual(tree_digests(src), tree_digests(self.path("out")))
        self.assertTrue(os.path.isdir(self.path("out/edge/empty-dir")))

        # cp -r semantics: a missing DEST becomes the copy; an existing directory as DEST
        # receives DEST/<basename>.
        self.weft("put", self.path("src/edge"), "/other")
        self.weft("put", self.path("src/edge"), "/other")
        listing = {e["name"] for e in self.weft_json("ls", "/other")}
        self.assertIn("edge", listing)
        self.assertIn("empty.bin", listing)
        self.assertIn("empty.bin", {e["name"] for e in self.weft_json("ls", "/other/edge")})

    def test_single_files_and_trailing_slash(self):
        a = self.write_file("a.bin", incompressible("a", 300_000))
        b = self.write_file("b.bin", incompressible("b", 5000))
        self.weft("put", a, "/one/renamed.bin")  # parents are created
        self.weft("put", a, b, "/many")  # several SRCs: DEST is a directory
        self.weft("put", b, "/into/")  # trailing '/': into that directory
        names = lambda p: sorted(e["name"] for e in self.weft_json("ls", p))
        self.assertEqual(names("/one"), ["renamed.bin"])
        self.assertEqual(names("/many"), ["a.bin", "b.bin"])
        self.assertEqual(names("/into"), ["b.bin"])
        self.assertEqual(self.weft("cat", "/one/renamed.bin").stdout, read_bytes(a))

    def test_stdin_put_streams_and_verbose_line(self):
        data = incompressible("stdin", 9 * MIB + 123)
        proc = self.weft("put", "-v", "-", "/streams/in.bin", input=data)
        line = proc.stdout.decode().strip()
        parts = line.split(" ")
        self.assertEqual(parts[:3], ["committed", "/streams/in.bin", str(len(data))], line)
        # Over 8 MiB: an ETag from the chunks ("<hex>-<chunks>", as S3 multipart), no MD5.
        self.assertRegex(parts[3], r"^[0-9a-f]{32}-[0-9]+$")
        self.assertEqual(self.weft("cat", "/streams/in.bin").stdout, data)
        st = self.weft_json("stat", "/streams/in.bin")
        self.assertEqual(st["size"], len(data))
        self.assertEqual(st["etag"], parts[3])
        # The same bytes elsewhere: the same ETag; other bytes: another; --md5-etag: the MD5.
        self.weft("put", "-", "/streams/again.bin", input=data)
        self.assertEqual(self.weft_json("stat", "/streams/again.bin")["etag"], parts[3])
        self.weft("put", "-", "/streams/other.bin", input=data[:-1] + b"x")
        self.assertNotEqual(self.weft_json("stat", "/streams/other.bin")["etag"], parts[3])
        self.weft("put", "--md5-etag", "-", "/streams/md5.bin", input=data)
        self.assertEqual(self.weft_json("stat", "/streams/md5.bin")["etag"],
                         hashlib.md5(data).hexdigest())
        # Ranges.
        out = self.weft("cat", "--offset", "1000", "--length", "5000", "/streams/in.bin").stdout
        self.assertEqual(out, data[1000:6000])
        out = self.weft("cat", "--offset", str(len(data) - 10), "/streams/in.bin").stdout
        self.assertEqual(out, data[-10:])
        # Ranges that start and end inside chunks, on 1 MiB pieces, past the end, or empty.
        for off, n in [(0, 1), (MIB - 1, 2), (MIB, MIB), (3 * MIB + 17, 2 * MIB + 5),
                       (len(data) - 1, 100), (len(data), 10), (len(data) + 5, 1), (12345, 0),
                       (5 * MIB - 3, 1)]:
            out = self.weft("cat", "--offset", str(off), "--length", str(n),
                            "/streams/in.bin").stdout
            self.assertEqual(out, data[off:off + n], (off, n))
        # get to stdout.
        self.assertEqual(self.weft("get", "/streams/in.bin", "-").stdout, data)

    def test_no_progress_bar_when_stderr_is_not_a_tty(self):
        self.write_file("f.bin", incompressible("f", 3 * MIB))
        proc = self.weft("put", self.path("f.bin"), "/f.bin")
        self.assertEqual(proc.stderr, b"")
        self.assertEqual(proc.stdout, b"")


class SnapshotAndVersionTest(WeftTestCase):
    def test_snapshot_then_modify_reads_old_bytes(self):
        v1 = self.generate("v1", kind="mixed", size=8 * MIB)
        self.weft("put", v1, "/ds")
        self.weft("snapshot", "create", "v1", "/ds")
        v2 = self.mutate(v1, "v2", fraction=0.3)
        self.weft("put", v2 + "/.", "/ds")
        self.weft("rm", "-r", "/ds/images")  # also delete a subtree after the snapshot
        self.weft("put", self.write_file("new.bin", b"new"), "/ds/new.bin")

        self.weft("get", "--snapshot", "v1", "/ds", self.path("restored"))
        self.assertEqual(tree_digests(v1), tree_digests(self.path("restored")))
        # The path form: /.weft/snapshots/<name>/ is the snapshotted subtree (/ds) itself.
        self.weft("get", "/.weft/snapshots/v1", self.path("restored2"))
        self.assertEqual(tree_digests(v1), tree_digests(self.path("restored2")))
        # ls at the snapshot lists the deleted subtree; live does not.
        self.assertIn("images", {e["name"] for e in self.weft_json("ls", "--snapshot", "v1", "/ds")})
        self.assertNotIn("images", {e["name"] for e in self.weft_json("ls", "/ds")})

        snaps = self.weft_json("snapshot", "list")
        self.assertEqual([(s["name"], s["path"]) for s in snaps], [("v1", "/ds")])
        # Snapshots are read-only.
        proc = self.weft("put", "-", "/.weft/snapshots/v1/x", input=b"x", check=False)
        self.assert_one_line_error(proc, "ReadOnly")
        self.weft("snapshot", "delete", "v1")
        self.assertEqual(self.weft_json("snapshot", "list"), [])
        proc = self.weft("cat", "--snapshot", "v1", "/ds/new.bin", check=False)
        self.assert_one_line_error(proc, "NotFound")

    def test_log_lists_versions_and_cat_reads_old_one(self):
        contents = [b"first version\n", incompressible("second", 200_000), b"third\n"]
        for c in contents:
            self.weft("put", "-", "/cfg/model.json", input=c)
        versions = self.weft_json("log", "/cfg/model.json")
        self.assertEqual(len(versions), 3)
        self.assertEqual([v["size"] for v in versions], [len(c) for c in reversed(contents)])
        self.assertTrue(versions[0]["is_current"])
        self.assertFalse(any(v["is_current"] for v in versions[1:]))
        seqs = [v["sequence"] for v in versions]
        self.assertEqual(seqs, sorted(seqs, reverse=True))
        for v, c in zip(versions, reversed(contents)):
            self.assertEqual(self.weft("cat", "--version", v["version_id"], "/cfg/model.json").stdout,
                             c)
        human = self.weft("log", "/cfg/model.json").stdout.decode()
        self.assertIn("(current)", human)
        proc = self.weft("cat", "--version", "no-such-version", "/cfg/model.json", check=False)
        self.assert_one_line_error(proc)


class NamespaceTest(WeftTestCase):
    def test_mkdir_mv_rm_ls_stat(self):
        self.weft("mkdir", "/a")
        self.assert_one_line_error(self.weft("mkdir", "/a", check=False), "AlreadyExists")
        self.assert_one_line_error(self.weft("mkdir", "/x/y/z", check=False), "NotFound")
        self.weft("mkdir", "-p", "/x/y/z")
        self.weft("mkdir", "-p", "/x/y/z")  # -p: existing is fine
        self.weft("put", "-", "/a/f.txt", input=b"hello")

        st = self.weft_json("stat", "/a/f.txt")
        self.assertEqual((st["type"], st["size"], st["path"]), ("file", 5, "/a/f.txt"))
        self.assertEqual(st["etag"], "5d41402abc4b2a76b9719d911017c592")
        self.assertEqual(self.weft_json("stat", "/x/y")["type"], "directory")
        self.assertIn(b"etag:", self.weft("stat", "/a/f.txt").stdout)

        self.weft("mv", "/a/f.txt", "/a/g.txt")
        self.weft("mv", "/a/g.txt", "/x/y")  # into an existing directory
        self.assertEqual(self.weft("cat", "/x/y/g.txt").stdout, b"hello")
        self.assert_one_line_error(self.weft("cat", "/a/f.txt", check=False), "NotFound")

        entries = self.weft_json("ls", "/x/y")
        self.assertEqual([(e["name"], e["type"]) for e in entries],
                         [("g.txt", "file"), ("z", "directory")])
        self.assertEqual(entries[0]["size"], 5)
        self.assertEqual(self.weft("ls", "/x/y").stdout, b"g.txt\nz/\n")
        long = self.weft("ls", "-l", "/x/y").stdout.decode().splitlines()
        self.assertTrue(long[0].startswith("-rw-r--r--") and long[0].endswith(" g.txt"), long)
        self.assertTrue(long[1].startswith("drwxr-xr-x"), long)
        self.assertEqual(self.weft_json("ls", "/x/y/g.txt")[0]["name"], "g.txt")

        self.assert_one_line_error(self.weft("rm", "/x", check=False), "directory")
        self.weft("rm", "/x/y/g.txt")
        self.weft("rm", "-r", "/x")
        self.assertEqual([e["name"] for e in self.weft_json("ls", "/")], ["a"])
        self.assert_one_line_error(self.weft("rm", "/nope", check=False), "NotFound")

    def test_ls_pages_through_large_directory(self):
        files = {f"f{i:05d}": str(i).encode() for i in range(2500)}
        os.makedirs(self.path("many"))
        for name, data in files.items():
            with open(self.path("many", name), "wb") as f:
                f.write(data)
        self.weft("put", self.path("many"), "/many")
        listed = [e["name"] for e in self.weft_json("ls", "/many")]
        self.assertEqual(listed, sorted(files))
        self.assertEqual(self.weft("ls", "/many").stdout.decode().split(), sorted(files))

    def test_changes_feed(self):
        self.weft("mkdir", "/d")
        self.weft("put", "-", "/d/f", input=b"1")
        self.weft("mv", "/d/f", "/d/g")
        self.weft("rm", "/d/g")
        changes = self.weft_json("changes")
        ops = [(c["op"], c["path"]) for c in changes]
        self.assertEqual([op for op, _ in ops], ["mkdir", "write", "rename", "unlink"])
        self.assertEqual(changes[2]["path2"], "/d/g")
        seqs = [c["sequence"] for c in changes]
        self.assertEqual(seqs, sorted(seqs))
        after = self.weft_json("changes", "--after", str(seqs[1]))
        self.assertEqual([c["sequence"] for c in after], seqs[2:])

    def test_du_gc_fsck(self):
        self.weft("put", "-", "/f", input=incompressible("x", 2 * MIB))
        self.weft("put", "-", "/f", input=incompressible("y", 2 * MIB))
        du = self.weft_json("du")
        self.assertEqual(du["files"], 1)
        self.assertEqual(du["logical_bytes"], 2 * MIB)
        self.assertEqual(du["referenced_bytes"], 4 * MIB)
        self.assertGreaterEqual(du["unique_bytes"], 4 * MIB)
        gc = self.weft_json("gc", "--keep-noncurrent", "0s")
        self.assertGreaterEqual(gc["versions_pruned"], 1)
        self.assertGreater(gc["bytes_reclaimed"], 0)
        du = self.weft_json("du")
        self.assertEqual(du["referenced_bytes"], 2 * MIB)
        self.assertEqual(self.weft("cat", "/f").stdout, incompressible("y", 2 * MIB))
        self.assertIn(b"reclaimed", self.weft("gc").stdout)
        self.assert_fsck_clean()
        self.assertIn(b"dedup ratio", self.weft("du").stdout)


class BadInputTest(WeftTestCase):
    def state(self):
        usage = json.loads(self.weft("du", "--json").stdout)
        # RocksDB's own files (WAL, MANIFEST) grow a little on every open, whatever happened
        # to the namespace: metadata_bytes is not part of the state.
        usage.pop("metadata_bytes", None)
        return (self.weft("changes").stdout, self.weft("ls", "-l", "/").stdout, usage)

    def test_bad_paths_change_nothing(self):
        self.weft("mkdir", "/ok")
        self.weft("put", "-", "/ok/file", input=b"keep me")
        f = self.write_file("local.txt", b"data")
        before = self.state()
        for bad in BAD_PATHS:
            for args in (["put", f, bad], ["put", "-", bad], ["mkdir", "-p", bad], ["mkdir", bad],
                         ["mv", "/ok/file", bad], ["rm", "-r", bad], ["stat", bad], ["cat", bad],
                         ["ls", bad], ["snapshot", "create", "s", bad], ["log", bad]):
                with self.subTest(args=args):
                    proc = self.weft(*args, input=b"x", check=False)
                    self.assert_one_line_error(proc, "InvalidArgument")
        self.assertEqual(before, self.state())
        self.assertEqual(self.weft("cat", "/ok/file").stdout, b"keep me")

    def test_usage_errors_exit_2_with_one_line(self):
        for args in (["put", "/only-one"], ["frobnicate"], ["ls", "--no-such-flag"],
                     ["cat", "--offset", "abc", "/x"], ["gc", "--keep-noncurrent", "10"],
                     ["gc", "--keep-noncurrent", "3y"], ["put", "-", "-", "/x"],
                     ["cat", "--version", "v", "--snapshot", "s", "/x"], []):
            with self.subTest(args=args):
                proc = self.weft(*args, check=False)
                self.assert_one_line_error(proc, code=2)

    def test_bad_sizes_are_refused_naming_the_flag(self):
        os.makedirs(self.path("mnt"), exist_ok=True)
        for args, flag in ((["serve", "--memory-cache", "12Q"], "--memory-cache"),
                           (["serve", "--metadata-cache", "1M"], "--metadata-cache"),
                           (["mount", "--cache-size", "0", self.path("mnt")], "--cache-size")):
            with self.subTest(args=args):
                proc = self.weft(*args, check=False)
                self.assert_one_line_error(proc, flag)

    def test_help_on_every_command(self):
        for cmd in (["put"], ["get"], ["cat"], ["ls"], ["stat"], ["rm"], ["mv"], ["mkdir"],
                    ["snapshot"], ["snapshot", "create"], ["snapshot", "list"],
                    ["snapshot", "delete"], ["log"], ["du"], ["gc"], ["fsck"], ["changes"]):
            with self.subTest(cmd=cmd):
                out = self.weft(*cmd, "--help").stdout.decode()
                self.assertIn("Example:", out)
                self.assertIn("weft " + " ".join(cmd), out)
        self.assertFalse(os.path.exists(self.data), "--help must not create the data directory")
        self.assertRegex(self.weft("--version").stdout.decode(), r"^weft \d+\.\d+\.\d+")

    def test_parallel_put_commits_each_file_once_and_stops_at_a_read_error(self):
        src = self.generate("src", kind="images", size=6 * MIB)
        self.write_file("src/large/a.bin", incompressible("pa", 17 * MIB))  # commits alone
        self.write_file("src/large/b.bin", incompressible("pb", 3 * MIB))  # chunk pipeline
        proc = self.weft("put", "-v", "-j", "4", src, "/ds")
        lines = proc.stdout.decode().splitlines()
        committed = [line.split()[1] for line in lines if line.startswith("committed ")]
        want = sorted("/ds/" + rel for rel in tree_digests(src))
        self.assertEqual(sorted(committed), want)  # each file once, none missing
        self.weft("get", "/ds", self.path("out"))
        self.assertEqual(tree_digests(src), tree_digests(self.path("out")))

        # A source that cannot be read (reading /proc/self/mem at 0 is EIO) stops the put with
        # one clear line: the other threads take no new file, abandon the ones they are
        # reading, and whatever was reported committed is there, whole.
        # 1 MB each: a failing thread started a few ms late must not see the others finish half.
        goods = [self.write_file(f"more/f{i:02d}.bin", incompressible(f"m{i}", 1_000_000 + i))
                 for i in range(40)]
        proc = self.weft("put", "-v", "-j", "3", "/proc/self/mem", *goods, "/more",
                         check=False)
        self.assert_one_line_error(proc, "/proc/self/mem")
        reported = [line.split()[1] for line in proc.stdout.decode().splitlines()]
        self.assertLess(len(reported), len(goods) // 2, "the put went on after the failure")
        for path in reported:
            name = path.rsplit("/", 1)[1]
            self.assertEqual(self.weft("cat", path).stdout, read_bytes(self.path("more/" + name)))
        listed = {e["name"] for e in self.weft_json("ls", "/more")} if reported else set()
        self.assertNotIn("mem", listed)
        self.assertEqual(listed, {p.rsplit("/", 1)[1] for p in reported})

        # A file being read when another fails is abandoned, not committed: a FIFO blocks its
        # thread with 1.5 MiB sent, /proc/self/mem fails meanwhile, then the FIFO is finished.
        fifo = self.path("slow.fifo")
        os.mkfifo(fifo)
        proc = subprocess.Popen([self.bin, "--data", self.data, "put", "-v", "-j", "2", fifo,
                                 "/proc/self/mem", "/abandoned"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with open(fifo, "wb", buffering=0) as w:
            try:
                w.write(incompressible("fifo", 3 * MIB // 2))
                time.sleep(1)  # the other thread fails within milliseconds
                w.write(incompressible("fifo2", 3 * MIB))
            except BrokenPipeError:
                pass  # the reader gave up first (it may, even during the first write)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn(b"/proc/self/mem", err)
        self.assertEqual(out, b"")
        self.assertNotIn("slow.fifo", {e["name"] for e in self.weft_json("ls", "/abandoned")})

        # Two sources for one destination: the last named wins, as with cp.
        x = self.write_file("x/same.bin", b"from x")
        y = self.write_file("y/same.bin", b"from y")
        self.weft("put", "-j", "4", x, y, "/dup/")
        self.assertEqual(self.weft("cat", "/dup/same.bin").stdout, b"from y")

    def test_missing_local_source(self):
        proc = self.weft("put", self.path("does-not-exist"), "/x", check=False)
        self.assert_one_line_error(proc, "does-not-exist")
        self.assertEqual(self.weft_json("ls", "/"), [])


class LockTest(WeftTestCase):
    def test_second_process_gets_clear_in_use_error(self):
        self.weft("mkdir", "/d")
        holder = subprocess.Popen([self.bin, "--data", self.data, "put", "-", "/d/held"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        try:
            # The holder opens the volume before reading stdin, and a pipe holds only 64 KiB:
            # once these writes return, it holds the lock. No sleeping on a guess.
            holder.stdin.write(incompressible("held", 2 * MIB))
            holder.stdin.flush()
            proc = self.weft("ls", "/", check=False)
            line = self.assert_one_line_error(proc)
            self.assertIn("in use", line.lower())
        finally:
            _, err = holder.communicate(timeout=60)  # closes stdin: the put completes
        self.assertEqual(holder.returncode, 0, err)
        self.assertEqual(self.weft_json("stat", "/d/held")["size"], 2 * MIB)


class ProgressTest(WeftTestCase):
    """A progress bar on stderr when it is a terminal; nothing when it is not."""

    def test_progress_bar_only_on_a_terminal(self):
        src = self.write_file("big.bin", incompressible("progress", 3 * MIB))
        master, slave = pty.openpty()
        try:
            proc = subprocess.run([self.bin, "--data", self.data, "put", src, "/tty.bin"],
                                  stdout=subprocess.PIPE, stderr=slave, timeout=120)
            os.close(slave)
            slave = -1
            shown = b""
            while True:
                try:
                    piece = os.read(master, 4096)
                except OSError:  # EIO once the other side is closed and drained
                    break
                if not piece:
                    break
                shown += piece
        finally:
            if slave >= 0:
                os.close(slave)
            os.close(master)
        self.assertEqual(proc.returncode, 0)
        text = shown.decode(errors="replace")
        self.assertIn("3.0 MiB / 3.0 MiB (100%)", text)
        self.assertIn("1/1 file", text)

        quiet = self.weft("put", src, "/pipe.bin")  # stderr is a pipe here
        self.assertEqual(quiet.stderr, b"")


if __name__ == "__main__":
    unittest.main()
