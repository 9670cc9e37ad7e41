"""The Python package (python/weft) against real servers on loopback: `weft serve` (a hub),
`weft spoke` and, once the binary has it, `weft mount`.

- WeftDataset over S3 under a real DataLoader (2 forked workers): exact bytes, every file
  once, in order; snapshot reads give the old bytes after an overwrite.
- WeftShardDataset: tar shards dealt to 2 ranks x 2 workers read every sample exactly once.
- HintingSampler against a real spoke: the declared order reaches the NeuralCache, which
  prefetches it; a bad spoke URL only logs one warning.
- save/load_checkpoint over weft:// and on a local directory; a writer SIGKILLed mid-save
  leaves the previous checkpoint intact.
- fsspec: weft:// read/write round trip, ls, info, ranged cat_file.
- MountTest: the same through `weft mount` (skipped while `weft mount --help` does not
  exist), including the mount's .weft/cache/hints control file.
"""

import collections
import hashlib
import io
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

from mountlib import Mount, require_fuse
from s3lib import ROOT_ACCESS, ROOT_SECRET, Hub, WeftProcess
from weftlib import SOURCE_DIR, weft_bin, write_tree

PYTHON_DIR = os.path.join(SOURCE_DIR, "python")
sys.path.insert(0, PYTHON_DIR)

import weft  # noqa: E402  (found through the path set above)

SPOKE_ACCESS = "WEFTSPOKEROOTKEY0001"
SPOKE_SECRET = "weft-spoke-root-secret-0123456789abcdefgh"
FILES = 200
KIB = 1024


def sha(data):
    return hashlib.sha256(data).hexdigest()


def as_list(batch):
    return batch


def make_files(seed=7, n=FILES):
    """{relative path: bytes}: n files of 1-100 KiB in 5 directories; every 10th is .txt."""
    rng = random.Random(seed)
    files = {}
    for i in range(n):
        ext = "txt" if i % 10 == 0 else "jpg"
        files[f"c{i % 5}/img_{i:04d}.{ext}"] = rng.randbytes(rng.randint(KIB, 100 * KIB))
    return files


def make_shards(n_shards=6, per_shard=10, seed=11):
    """[(shard name, tar bytes)] and {(key, ext): sha256} of every sample member."""
    rng = random.Random(seed)
    shards, expected = [], {}
    for s in range(n_shards):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for j in range(per_shard):
                key = f"part{s % 2}/{s:02d}{j:04d}"
                for ext, data in (("jpg", rng.randbytes(rng.randint(KIB, 20 * KIB))),
                                  ("cls", str(rng.randint(0, 9)).encode()),
                                  ("meta.json", json.dumps({"i": j}).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                    expected[(key, ext)] = sha(data)
        shards.append((f"shard-{s:03d}.tar", buf.getvalue()))
    return shards, expected


def put_tree(bin_path, data_dir, src, dest):
    subprocess.run([bin_path, "--data", data_dir, "-q", "put", src, dest], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def stop(process):
    if process.proc.poll() is None:
        process.stop()
    for pipe in (process.proc.stdout, process.proc.stderr):
        pipe.close()


def declare_in_a_process_group(rank, world, port, spoke_url, out):
    """One rank of a gloo process group (torch.distributed, as torchrun starts it) declaring
    its share with a HintingSampler that is given no rank: it must take the group's."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        client = weft.Client(spoke_url, SPOKE_ACCESS, SPOKE_SECRET)
        ds = weft.WeftDataset("weft://data/train", client=client)
        share = list(range(rank, len(ds), world))  # a plain list: no rank of its own
        sampler = weft.HintingSampler(share, ds, job="job-dist", client=client,
                                      declare_next=False)
        order = list(sampler)
        dist.barrier()
        out.put((rank, sampler.rank, sampler.world_size, sampler.hints_accepted,
                 sampler.hint_failures, order == share))
        client.close()
    finally:
        dist.destroy_process_group()


class Spoke(WeftProcess):
    what = "weft spoke"

    def __init__(self, bin_path, hub_url, cache, portal):
        env = dict(os.environ, WEFT_HUB_ACCESS_KEY=ROOT_ACCESS, WEFT_HUB_SECRET_KEY=ROOT_SECRET,
                   WEFT_ROOT_ACCESS_KEY=SPOKE_ACCESS, WEFT_ROOT_SECRET_KEY=SPOKE_SECRET)
        super().__init__([bin_path, "spoke", "--hub", hub_url, "--cache", cache, "--site",
                          "gpu", "--portal", portal, "--listen", "127.0.0.1:0"], env)


class ClassHub(unittest.TestCase):
    """One hub per test class over a data directory prepared with `weft put`: /data/train
    (FILES files), /data/snap (20 files) and /data/shards (6 tar shards)."""

    @classmethod
    def setUpClass(cls):
        cls.bin = weft_bin()
        cls.tmp = tempfile.mkdtemp(prefix=f"weft-{cls.__name__}-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.data = os.path.join(cls.tmp, "data")
        cls.files = make_files()
        cls.snap_files = make_files(seed=8, n=20)
        cls.shards, cls.shard_samples = make_shards()
        src = os.path.join(cls.tmp, "src")
        write_tree(os.path.join(src, "train"), cls.files)
        write_tree(os.path.join(src, "snap"), cls.snap_files)
        write_tree(os.path.join(src, "shards"), dict(cls.shards))
        put_tree(cls.bin, cls.data, src + "/.", "/data")
        cls.hub = Hub(cls.bin, cls.data)
        cls.addClassCleanup(stop, cls.hub)
        cls.client = weft.Client(cls.hub.url, ROOT_ACCESS, ROOT_SECRET)
        cls.addClassCleanup(cls.client.close)


class ApiTest(ClassHub):
    """The package over the hub's S3 API."""

    def test_dataset_under_a_dataloader_with_two_workers_reads_exact_bytes(self):
        import torch.utils.data as tud

        ds = weft.WeftDataset("weft://data/train", transform=sha, client=self.client)
        self.assertEqual(ds.paths, sorted(self.files))
        self.assertEqual(len(ds), FILES)
        self.assertEqual(ds.path_of(3), "/data/train/" + ds.paths[3])
        self.assertEqual(ds.dataset_path, "/data/train")
        self.assertEqual(ds.read(5), self.files[ds.paths[5]])
        loader = tud.DataLoader(ds, batch_size=10, num_workers=2, collate_fn=as_list)
        got = [d for batch in loader for d in batch]
        self.assertEqual(got, [sha(self.files[p]) for p in ds.paths])  # order, bytes, count
        # Shuffled, the same multiset: nothing missing or duplicated.
        loader = tud.DataLoader(ds, batch_size=7, num_workers=2, shuffle=True,
                                collate_fn=as_list)
        got = collections.Counter(d for batch in loader for d in batch)
        self.assertEqual(got, collections.Counter(sha(b) for b in self.files.values()))

        txt = weft.WeftDataset("weft://data/train", extensions=[".TXT"], client=self.client)
        self.assertEqual(txt.paths, sorted(p for p in self.files if p.endswith(".txt")))
        self.assertEqual(len(txt), FILES // 10)

    def test_dataset_errors_are_clear(self):
        with self.assertRaises(FileNotFoundError):
            weft.WeftDataset("weft://data/no-such-prefix", client=self.client)
        with self.assertRaises(FileNotFoundError):
            weft.WeftDataset("weft://nosuchbucket/x", client=self.client)
        bad = weft.Client(self.hub.url, ROOT_ACCESS, "wrong-secret")
        with self.assertRaises(PermissionError) as cm:
            weft.WeftDataset("weft://data/train", client=bad)
        self.assertEqual(cm.exception.code, "SignatureDoesNotMatch")
        with self.assertRaises(FileNotFoundError) as cm:
            self.client.get_object("data", "train/nope.jpg")
        self.assertEqual(cm.exception.code, "NoSuchKey")
        with self.assertRaises(weft.WeftError) as cm:
            self.client.put_object("data", "train/c0/img_0005.jpg/below", b"x")
        self.assertEqual((cm.exception.code, cm.exception.status), ("ObjectConflict", 409))
        with self.assertRaises(ConnectionError):
            weft.Client("http://127.0.0.1:1", ROOT_ACCESS, ROOT_SECRET).head_bucket("data")

    def test_snapshot_reads_return_the_old_bytes_after_an_overwrite(self):
        reply = self.client.rest("POST", "snapshots", {"name": "v1", "path": "/data/snap"})
        self.assertEqual(reply["name"], "v1")
        changed = sorted(self.snap_files)[::4]
        for rel in changed:
            self.client.put_object("data", "snap/" + rel, b"v2:" + rel.encode())
        live = weft.WeftDataset("weft://data/snap", client=self.client)
        old = weft.WeftDataset("weft://data/snap", snapshot="v1", client=self.client)
        self.assertEqual(old.paths, live.paths)
        self.assertEqual(old.dataset_path, "/.weft/snapshots/v1/data/snap")
        for i, rel in enumerate(old.paths):
            self.assertEqual(old[i], self.snap_files[rel], rel)
            want = b"v2:" + rel.encode() if rel in changed else self.snap_files[rel]
            self.assertEqual(live[i], want, rel)
        with self.assertRaises(FileNotFoundError):
            weft.WeftDataset("weft://data/snap", snapshot="nope", client=self.client)

    def test_shards_split_across_two_ranks_and_two_workers_read_every_sample_once(self):
        import torch.utils.data as tud

        seen = collections.Counter()
        per_rank = []
        for rank in range(2):
            ds = weft.WeftShardDataset("weft://data/shards", rank=rank, world_size=2,
                                       client=self.client)
            self.assertEqual(len(ds.shards), len(self.shards))
            loader = tud.DataLoader(ds, batch_size=None, num_workers=2)
            keys = set()
            for sample in loader:
                self.assertTrue(sample["__shard__"].startswith("weft://data/shards/"))
                self.assertEqual(set(sample) - {"__key__", "__shard__"},
                                 {"jpg", "cls", "meta.json"})
                for ext in ("jpg", "cls", "meta.json"):
                    self.assertEqual(sha(sample[ext]),
                                     self.shard_samples[(sample["__key__"], ext)])
                    seen[(sample["__key__"], ext)] += 1
                keys.add(sample["__key__"])
            per_rank.append(keys)
        self.assertEqual(set(seen), set(self.shard_samples))
        self.assertEqual(set(seen.values()), {1})
        self.assertFalse(per_rank[0] & per_rank[1])
        # The deal itself: ranks, then workers, no overlap and no loss, also shuffled.
        ds = weft.WeftShardDataset("weft://data/shards/", shuffle=True, seed=3,
                                   client=self.client)
        for epoch in range(2):
            ds.set_epoch(epoch)
            parts = [s for r in range(2) for w in range(2) for s in ds.shards_for(r, 2, w, 2)]
            self.assertEqual(sorted(parts), sorted(ds.shards))
            self.assertTrue(all(ds.shards_for(r, 2, w, 2) for r in range(2) for w in range(2)))

    def test_shards_from_a_local_directory(self):
        local = os.path.join(self.tmp, "src", "shards")
        seen = collections.Counter()
        for rank in range(2):
            for sample in weft.WeftShardDataset(local, rank=rank, world_size=2):
                for ext in ("jpg", "cls", "meta.json"):
                    self.assertEqual(sha(sample[ext]),
                                     self.shard_samples[(sample["__key__"], ext)])
                    seen[(sample["__key__"], ext)] += 1
        self.assertEqual(dict(seen), {k: 1 for k in self.shard_samples})
        with self.assertRaises(FileNotFoundError):
            weft.WeftShardDataset(os.path.join(self.tmp, "nothing-here"))
        with self.assertRaises(ValueError):
            weft.WeftShardDataset(local, rank=2, world_size=2)

    def test_checkpoint_round_trip_over_weft(self):
        import torch

        url = "weft://data/ckpt/model.pt"
        first = {"step": 1, "w": torch.randn(64, 64, generator=torch.Generator().manual_seed(1))}
        weft.save_checkpoint(first, url, client=self.client)
        second = {"step": 2, "w": first["w"] * 2}
        weft.save_checkpoint(second, url, client=self.client)
        back = weft.load_checkpoint(url, client=self.client)
        self.assertEqual(back["step"], 2)
        self.assertTrue(torch.equal(back["w"], second["w"]))
        with self.assertRaises(FileNotFoundError):
            weft.load_checkpoint("weft://data/ckpt/missing.pt", client=self.client)

    def test_hinting_sampler_on_a_hub_without_neuralcache_only_warns(self):
        ds = weft.WeftDataset("weft://data/snap", client=self.client)
        sampler = weft.HintingSampler(list(range(len(ds)))[::-1], ds)
        with self.assertLogs("weft.torch", logging.WARNING) as logs:
            self.assertEqual(list(sampler), list(range(len(ds)))[::-1])
            self.assertEqual(list(sampler), list(range(len(ds)))[::-1])
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("NoSuchEndpoint", logs.output[0])
        self.assertEqual((sampler.hints_sent, sampler.hint_failures), (0, 2))

    def test_fsspec_round_trip_ls_info_and_ranges(self):
        import fsspec

        opts = {"endpoint": self.hub.url, "access_key": ROOT_ACCESS, "secret_key": ROOT_SECRET}
        body = random.Random(3).randbytes(300 * KIB + 17)
        with fsspec.open("weft://data/fs/dir/blob.bin", "wb", **opts) as f:
            f.write(body[:1000])
            f.write(body[1000:])
        with fsspec.open("weft://data/fs/dir/blob.bin", "rb", block_size=64 * KIB, **opts) as f:
            self.assertEqual(f.read(10), body[:10])
            f.seek(200 * KIB)
            self.assertEqual(f.read(5), body[200 * KIB:200 * KIB + 5])
            f.seek(0)
            self.assertEqual(f.read(), body)
        fs = fsspec.filesystem("weft", **opts)
        self.assertIsInstance(fs, weft.WeftFileSystem)
        # s3fs's option names mean the same (skip_instance_cache: a fresh client).
        s3fs_style = fsspec.filesystem("weft", endpoint_url=self.hub.url, key=ROOT_ACCESS,
                                       secret=ROOT_SECRET, skip_instance_cache=True)
        self.assertEqual(s3fs_style.cat_file("weft://data/fs/dir/blob.bin", start=0, end=4),
                         body[:4])
        fs.pipe_file("weft://data/fs/top.txt", b"hello weft")
        self.assertEqual(fs.ls("data/fs", detail=False), ["data/fs/dir", "data/fs/top.txt"])
        entries = {e["name"]: e for e in fs.ls("weft://data/fs/", detail=True)}
        self.assertEqual(entries["data/fs/dir"]["type"], "directory")
        self.assertEqual((entries["data/fs/top.txt"]["type"], entries["data/fs/top.txt"]["size"]),
                         ("file", 10))
        info = fs.info("weft://data/fs/dir/blob.bin")
        self.assertEqual((info["type"], info["size"]), ("file", len(body)))
        self.assertEqual(info["ETag"], hashlib.md5(body).hexdigest())
        self.assertEqual(fs.info("data/fs/dir")["type"], "directory")
        self.assertEqual(fs.info("data")["type"], "directory")
        self.assertIn("data", fs.ls("", detail=False))
        self.assertEqual(fs.cat_file("data/fs/dir/blob.bin", start=100, end=250), body[100:250])
        self.assertEqual(fs.cat_file("data/fs/dir/blob.bin", start=-7), body[-7:])
        self.assertEqual(fs.cat_file("data/fs/dir/blob.bin", start=5, end=-5), body[5:-5])
        self.assertEqual(fs.cat_file("data/fs/top.txt", start=6, end=100), b"weft")
        self.assertEqual(fs.cat("weft://data/fs/top.txt"), b"hello weft")
        self.assertTrue(fs.exists("weft://data/fs/top.txt"))
        self.assertFalse(fs.exists("weft://data/fs/nope.txt"))
        with self.assertRaises(FileNotFoundError):
            fs.info("data/fs/nope")
        with self.assertRaises(FileNotFoundError):
            fsspec.open("weft://data/fs/nope", "rb", **opts).open()
        fs.cp_file("data/fs/top.txt", "data/fs/copy.txt")
        self.assertEqual(fs.cat_file("data/fs/copy.txt"), b"hello weft")
        fs.rm("weft://data/fs/top.txt")
        self.assertFalse(fs.exists("data/fs/top.txt"))
        fs.mkdir("weft://fsbucket")
        self.assertTrue(fs.exists("fsbucket"))
        fs.rm("data/fs", recursive=True)
        self.assertFalse(fs.exists("data/fs"))
        fs.rmdir("fsbucket")
        self.assertFalse(fs.exists("fsbucket"))

    def test_client_is_fork_safe(self):
        # The parent holds a keep-alive connection; children must not share its socket.
        self.assertEqual(self.client.get_object("data", "train/" + sorted(self.files)[0]),
                         self.files[sorted(self.files)[0]])
        pids = []
        for n in range(3):
            pid = os.fork()
            if pid == 0:
                ok = True
                try:
                    for rel in sorted(self.files)[n::3][:20]:
                        ok &= self.client.get_object("data", "train/" + rel) == self.files[rel]
                finally:
                    os._exit(0 if ok else 1)
            pids.append(pid)
        for rel in sorted(self.files)[:20]:
            self.assertEqual(self.client.get_object("data", "train/" + rel), self.files[rel])
        for pid in pids:
            self.assertEqual(os.waitpid(pid, 0)[1], 0)


class EnvTest(ClassHub):
    """Configuration from the environment, as fsspec.open and DataLoader workers use it."""

    def test_environment_configures_client_and_fsspec(self):
        import fsspec

        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        for name in ("WEFT_ACCESS_KEY", "WEFT_SECRET_KEY"):
            os.environ.pop(name, None)
        os.environ.update(WEFT_ENDPOINT=self.hub.url, WEFT_ROOT_ACCESS_KEY=ROOT_ACCESS,
                          WEFT_ROOT_SECRET_KEY=ROOT_SECRET)
        weft.WeftFileSystem.clear_instance_cache()
        rel = sorted(self.files)[1]
        with fsspec.open("weft://data/train/" + rel, "rb") as f:
            self.assertEqual(f.read(), self.files[rel])
        self.assertEqual(weft.WeftDataset("weft://data/snap").read(0),
                         self.snap_files[sorted(self.snap_files)[0]])
        os.environ["WEFT_SECRET_KEY"] = "wrong"
        os.environ["WEFT_ACCESS_KEY"] = ROOT_ACCESS
        with self.assertRaises(PermissionError):
            weft.Client().head_object("data", "train/" + rel)
        del os.environ["WEFT_ENDPOINT"]
        with self.assertRaises(ValueError):
            weft.Client()


class HintTest(ClassHub):
    """HintingSampler against a real spoke (portal /data) with a NeuralCache."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.spoke = Spoke(cls.bin, cls.hub.url, os.path.join(cls.tmp, "spoke"), "/data")
        cls.addClassCleanup(stop, cls.spoke)
        cls.spoke_client = weft.Client(cls.spoke.url, SPOKE_ACCESS, SPOKE_SECRET)
        cls.addClassCleanup(cls.spoke_client.close)

    def record_rest_bodies(self):
        """Returns the list the spoke client's REST calls append their bodies to from now on
        (until the test ends)."""
        sent = []
        rest = self.spoke_client.rest

        def recording(method, endpoint, body=None, **kw):
            sent.append(body)
            return rest(method, endpoint, body, **kw)

        self.spoke_client.rest = recording
        self.addCleanup(delattr, self.spoke_client, "rest")
        return sent

    def hints_expert(self):
        stats = self.spoke_client.cache_stats()
        return stats, next(e for e in stats["prefetch"]["experts"] if e["name"] == "hints")

    def test_an_epoch_declares_its_order_and_the_spoke_prefetches_it(self):
        import torch
        import torch.utils.data as tud

        ds = weft.WeftDataset("weft://data/train", transform=sha, client=self.spoke_client)
        base = torch.utils.data.RandomSampler(ds, generator=torch.Generator().manual_seed(5))
        sampler = weft.HintingSampler(base, ds)  # the spoke is the dataset's endpoint
        order = list(iter(sampler))
        self.assertEqual(sorted(order), list(range(FILES)))
        self.assertEqual((sampler.hints_sent, sampler.hint_requests, sampler.hint_failures),
                         (FILES, 1, 0))
        self.assertEqual(sampler.hints_accepted, FILES)
        self.assertEqual(sampler.last_reply["unknown_paths"], 0)
        # The hints expert prefetches the declared items.
        deadline = time.monotonic() + 20
        while True:
            stats, hints = self.hints_expert()
            if hints["issued"] >= FILES or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(hints["issued"], FILES, stats)
        self.assertGreaterEqual(stats["prefetch"]["bytes_prefetched"],
                                sum(len(b) for b in self.files.values()), stats)
        # A DataLoader epoch through the spoke: exact bytes, served from what was fetched.
        before = stats
        loader = tud.DataLoader(ds, batch_size=10, sampler=order, num_workers=2,
                                collate_fn=as_list)
        got = [d for batch in loader for d in batch]
        self.assertEqual(got, [sha(self.files[ds.paths[i]]) for i in order])
        after, hints = self.hints_expert()
        self.assertEqual(after["reads"] - before["reads"], FILES, after)
        self.assertGreaterEqual(after["hits"] - before["hits"], FILES * 9 // 10, after)
        self.assertGreater(hints["useful"], 0, after)

    def test_each_rank_declares_its_own_share(self):
        import torch

        ds = weft.WeftDataset("weft://data/train", client=self.spoke_client)
        sent = self.record_rest_bodies()
        shares = []
        for rank in range(2):
            dist = torch.utils.data.DistributedSampler(ds, num_replicas=2, rank=rank, seed=4)
            sampler = weft.HintingSampler(dist, ds, spoke=self.spoke.url, job="job-ranks",
                                          client=self.spoke_client, declare_next=False)
            sampler.set_epoch(1)
            shares.append(list(sampler))
            self.assertEqual((sampler.hint_failures, sampler.hints_accepted),
                             (0, len(shares[-1])))
        # Together the two ranks cover the dataset; each hint names its rank and the world,
        # so the spoke replaces only that rank's earlier order (rank 1 used to erase rank 0's).
        self.assertEqual(sorted(shares[0] + shares[1]), list(range(FILES)))
        self.assertEqual([(b["rank"], b["world_size"], b["append"]) for b in sent],
                         [(0, 2, False), (1, 2, False)])
        self.assertNotIn("local_world_size", sent[0])
        self.assertEqual([p for p in sent[1]["paths"]], [ds.path_of(i) for i in shares[1]])
        # An explicit rank beyond the sampler's world widens it rather than being refused.
        lone = weft.HintingSampler(range(3), ds, spoke=self.spoke.url, client=self.spoke_client,
                                   rank=3)
        list(lone)
        self.assertEqual((sent[-1]["rank"], sent[-1]["world_size"]), (3, 4))
        self.assertEqual(lone.hint_failures, 0)
        # Under torchrun on a node of 2 ranks, the spoke hears how many declare through it.
        os.environ["LOCAL_WORLD_SIZE"] = "2"
        self.addCleanup(os.environ.pop, "LOCAL_WORLD_SIZE", None)
        local = weft.HintingSampler(range(3), ds, spoke=self.spoke.url, client=self.spoke_client,
                                    rank=1)
        list(local)
        self.assertEqual(sent[-1]["local_world_size"], 2)
        self.assertEqual((local.hint_failures, local.hints_accepted), (0, 3))

    def test_ranks_of_a_process_group_declare_their_shares_without_being_told(self):
        import multiprocessing
        import socket

        with socket.socket() as probe:  # a free port for the group's rendezvous
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        procs = [ctx.Process(target=declare_in_a_process_group,
                             args=(rank, 2, port, self.spoke.url, out)) for rank in range(2)]
        for p in procs:
            p.start()
        results = sorted(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=60)
            self.assertEqual(p.exitcode, 0)
        share = FILES // 2
        self.assertEqual(results, [(0, 0, 2, share, 0, True), (1, 1, 2, share, 0, True)])

    def test_large_orders_go_in_pieces_and_set_epoch_is_forwarded(self):
        import torch
        import weft.torch as wt

        self.addCleanup(setattr, wt, "MAX_HINT_PATHS", wt.MAX_HINT_PATHS)
        wt.MAX_HINT_PATHS = 64
        ds = weft.WeftDataset("weft://data/train", client=self.spoke_client)
        dist = torch.utils.data.DistributedSampler(ds, num_replicas=1, rank=0, seed=9)
        sampler = weft.HintingSampler(dist, ds, spoke=self.spoke.url, job="job-a",
                                      client=self.spoke_client)
        sent = self.record_rest_bodies()
        sampler.set_epoch(3)
        self.assertEqual(dist.epoch, 3)
        order = list(sampler)
        self.assertEqual(dist.epoch, 3)  # the next epoch was computed on a copy
        dist.set_epoch(3)
        self.assertEqual(order, list(dist))
        dist.set_epoch(4)
        following = list(dist)
        self.assertNotEqual(following, order)
        self.assertEqual(len(sampler), FILES)
        # This epoch's order in four pieces (the first replaces), then the next epoch's,
        # appended, so the spoke can fetch its head while this epoch ends.
        self.assertEqual((sampler.hints_sent, sampler.hint_requests), (2 * FILES, 8))
        self.assertEqual([b["append"] for b in sent], [False] + [True] * 7)
        self.assertEqual([p for b in sent[:4] for p in b["paths"]],
                         [ds.path_of(i) for i in order])
        self.assertEqual([p for b in sent[4:] for p in b["paths"]],
                         [ds.path_of(i) for i in following])
        self.assertEqual(sampler.declared_next_epoch, 4)
        self.assertEqual(sampler.hints_accepted, 2 * FILES)
        self.assertEqual(sampler.last_reply["job"], "job-a")
        # Without set_epoch (or with declare_next=False) nothing is guessed.
        sent.clear()
        once = weft.HintingSampler(dist, ds, spoke=self.spoke.url, client=self.spoke_client,
                                   declare_next=False)
        once.set_epoch(5)
        self.assertEqual(len(list(once)), FILES)
        self.assertEqual(len(sent), 4)
        self.assertIsNone(once.declared_next_epoch)
        sent.clear()
        unmoved = weft.HintingSampler(dist, ds, spoke=self.spoke.url, client=self.spoke_client)
        self.assertEqual(len(list(unmoved)), FILES)
        self.assertEqual(len(sent), 4)
        self.assertIsNone(unmoved.declared_next_epoch)
        # A Subset maps its indices to the underlying files.
        sub = torch.utils.data.Subset(ds, [5, 3, 199])
        sampler = weft.HintingSampler([2, 0, 1], sub, client=self.spoke_client)
        self.assertEqual(list(sampler), [2, 0, 1])
        self.assertEqual((sampler.hints_sent, sampler.hints_accepted), (3, 3))

    def test_a_bad_spoke_url_only_logs_one_warning(self):
        ds = weft.WeftDataset("weft://data/snap", client=self.spoke_client)
        sampler = weft.HintingSampler(range(len(ds)), ds, spoke="http://127.0.0.1:1")
        with self.assertLogs("weft.torch", logging.WARNING) as logs:
            for _ in range(3):
                self.assertEqual(list(sampler), list(range(len(ds))))
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("127.0.0.1:1", logs.output[0])
        self.assertEqual((sampler.hints_sent, sampler.hint_failures), (0, 3))
        # Wrong keys at the right spoke: the same, training goes on.
        bad = weft.Client(self.spoke.url, SPOKE_ACCESS, "wrong")
        sampler = weft.HintingSampler(range(len(ds)), ds, client=bad)
        with self.assertLogs("weft.torch", logging.WARNING) as logs:
            self.assertEqual(list(sampler), list(range(len(ds))))
        self.assertIn("InvalidCredentials", logs.output[0])


# A writer that is SIGKILLed halfway through save_checkpoint: it flushes the first MiB of
# the new checkpoint into the temporary file, says PARTIAL and waits to be killed.
KILLED_WRITER = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import weft.torch as wt

real_fdopen = os.fdopen

class Slow:
    def __init__(self, f):
        self.f, self.n = f, 0
    def write(self, b):
        n = self.f.write(b)
        self.n += len(b)
        if self.n >= 1 << 20:
            self.f.flush()
            print("PARTIAL", flush=True)
            time.sleep(600)
        return n
    def flush(self):
        self.f.flush()
    def fileno(self):
        return self.f.fileno()
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.f.close()

os.fdopen = lambda fd, *a, **k: Slow(real_fdopen(fd, *a, **k))
wt.save_checkpoint({"step": 2, "w": torch.arange(4 << 20, dtype=torch.float32)}, sys.argv[2])
print("DONE", flush=True)
"""


class LocalTest(unittest.TestCase):
    """Plain local directories (not on a weft mount) and checkpoints on them."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-local-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def test_pip_installs_the_package_with_its_fsspec_entry_point(self):
        # A copy: pip's in-tree build would leave build/ and *.egg-info in the checkout.
        src = shutil.copytree(PYTHON_DIR, os.path.join(self.tmp, "src"))
        target = os.path.join(self.tmp, "site")
        proc = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--no-deps",
                               "--no-build-isolation", "--no-index", "--target", target, src],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout.decode(errors="replace"))
        check = ("import importlib.metadata as m, weft, fsspec; "
                 "print(weft.__file__); "
                 "print([e.value for e in m.entry_points(group='fsspec.specs') "
                 "if e.name == 'weft']); "
                 "print(type(fsspec.filesystem('weft', endpoint='http://127.0.0.1:1')).__name__)")
        proc = subprocess.run(["/usr/bin/python3", "-c", check], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120,
                              env=dict(os.environ, PYTHONPATH=target), cwd=self.tmp)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace"))
        lines = proc.stdout.decode().splitlines()
        self.assertTrue(lines[0].startswith(target), lines)
        self.assertEqual(lines[1], "['weft.fsspec:WeftFileSystem']")
        self.assertEqual(lines[2], "WeftFileSystem")

    def test_dataset_on_a_plain_directory(self):
        files = make_files(seed=9, n=30)
        root = write_tree(os.path.join(self.tmp, "train"), files)
        os.symlink(os.path.join(root, sorted(files)[0]), os.path.join(root, "link.jpg"))
        ds = weft.WeftDataset(root)
        self.assertEqual(ds.paths, sorted(files))  # the symlink is not a regular file
        self.assertEqual([ds[i] for i in range(len(ds))], [files[p] for p in ds.paths])
        self.assertIsNone(ds.mount_root)
        self.assertIsNone(ds.path_of(0))
        sampler = weft.HintingSampler(range(len(ds)), ds)
        with self.assertLogs("weft.torch", logging.WARNING) as logs:
            self.assertEqual(list(sampler), list(range(len(ds))))
        self.assertIn("neither on a weft mount", logs.output[0])
        with self.assertRaises(ValueError):
            weft.WeftDataset(root, snapshot="v1")
        with self.assertRaises(NotADirectoryError):
            weft.WeftDataset(os.path.join(root, sorted(files)[0]))
        with self.assertRaises(FileNotFoundError):
            weft.WeftDataset(root, extensions=[".png"])

    def test_checkpoint_round_trip_and_killed_writer(self):
        check_local_checkpoints(self, os.path.join(self.tmp, "run"))


def check_local_checkpoints(test, directory):
    import torch

    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.pt")
    first = {"step": 1, "w": torch.randn(128, 128, generator=torch.Generator().manual_seed(2))}
    weft.save_checkpoint(first, path)
    back = weft.load_checkpoint(path, map_location="cpu")
    test.assertEqual(back["step"], 1)
    test.assertTrue(torch.equal(back["w"], first["w"]))
    with open(path, "rb") as f:
        saved = f.read()
    test.assertEqual(os.listdir(directory), ["model.pt"])

    # An error while saving removes the temporary file and keeps the previous checkpoint.
    with test.assertRaises(Exception):
        weft.save_checkpoint({"step": 2, "bad": lambda: 0}, path)
    test.assertEqual(os.listdir(directory), ["model.pt"])
    with open(path, "rb") as f:
        test.assertEqual(f.read(), saved)

    # SIGKILL mid-write: the temporary file is partial, the checkpoint is the previous one.
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, PYTHON_DIR, path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        test.assertEqual(line.strip(), b"PARTIAL", proc.stderr.read() if not line else line)
        temps = [n for n in os.listdir(directory) if n.startswith(".model.pt.")]
        test.assertEqual(len(temps), 1, os.listdir(directory))
        test.assertGreaterEqual(os.path.getsize(os.path.join(directory, temps[0])), 1 << 20)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    with open(path, "rb") as f:
        test.assertEqual(f.read(), saved)
    back = weft.load_checkpoint(path)
    test.assertEqual(back["step"], 1)
    test.assertTrue(torch.equal(back["w"], first["w"]))

    # The next save replaces it whole.
    second = {"step": 3, "w": first["w"] + 1}
    weft.save_checkpoint(second, path)
    test.assertTrue(torch.equal(weft.load_checkpoint(path)["w"], second["w"]))


class MountTestCase(unittest.TestCase):
    """Each test gets a temporary directory, a data directory and a mount point."""

    @classmethod
    def setUpClass(cls):
        cls.bin = weft_bin()
        require_fuse()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix=f"weft-{self.id().split('.')[-1][:40]}-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.data = os.path.join(self.tmp, "data")
        self.mp = os.path.join(self.tmp, "mnt")
        os.makedirs(self.mp)

    def mount(self, *args, env=None):
        m = Mount(self.bin, self.mp, list(args), env=env)
        self.addCleanup(lambda: m.proc.poll() is None and m.stop())
        self.assertTrue(os.path.ismount(self.mp))
        return m

    def unmount(self, m):
        self.assertEqual(m.stop(), 0, b"".join(m.lines))
        self.assertFalse(os.path.ismount(self.mp))



class MountTest(MountTestCase):
    """The package through `weft mount`: a local volume and an embedded spoke."""

    def test_local_mount_dataset_snapshot_shards_and_checkpoints(self):
        import torch.utils.data as tud

        files = make_files()
        shards, shard_samples = make_shards()
        src = os.path.join(self.tmp, "src")
        write_tree(os.path.join(src, "train"), files)
        write_tree(os.path.join(src, "shards"), dict(shards))
        put_tree(self.bin, self.data, src + "/.", "/data")
        subprocess.run([self.bin, "--data", self.data, "snapshot", "create", "v1", "/data"],
                       check=True, stdout=subprocess.PIPE)
        changed = sorted(files)[::7]
        v2 = os.path.join(self.tmp, "v2")
        write_tree(v2, {rel: b"v2:" + rel.encode() for rel in changed})
        put_tree(self.bin, self.data, v2 + "/.", "/data/train")
        m = self.mount("--data", self.data)

        root = os.path.join(self.mp, "data", "train")
        ds = weft.WeftDataset(root, transform=sha)
        self.assertEqual(ds.mount_root, os.path.realpath(self.mp))
        self.assertEqual(ds.dataset_path, "/data/train")
        self.assertEqual(ds.path_of(0), "/data/train/" + ds.paths[0])
        self.assertEqual(ds.paths, sorted(files))
        want = {rel: (b"v2:" + rel.encode() if rel in changed else data)
                for rel, data in files.items()}
        loader = tud.DataLoader(ds, batch_size=10, num_workers=2, collate_fn=as_list)
        self.assertEqual([d for b in loader for d in b], [sha(want[p]) for p in ds.paths])
        old = weft.WeftDataset(root, snapshot="v1", transform=sha)
        self.assertEqual(old.paths, ds.paths)
        loader = tud.DataLoader(old, batch_size=10, num_workers=2, collate_fn=as_list)
        self.assertEqual([d for b in loader for d in b], [sha(files[p]) for p in old.paths])

        seen = collections.Counter()
        for rank in range(2):
            sds = weft.WeftShardDataset(os.path.join(self.mp, "data", "shards"), rank=rank,
                                        world_size=2)
            for sample in tud.DataLoader(sds, batch_size=None, num_workers=2):
                for ext in ("jpg", "cls", "meta.json"):
                    self.assertEqual(sha(sample[ext]), shard_samples[(sample["__key__"], ext)])
                    seen[(sample["__key__"], ext)] += 1
        self.assertEqual(dict(seen), {k: 1 for k in shard_samples})

        # No NeuralCache on a local volume: hinting warns once and training goes on.
        sampler = weft.HintingSampler(range(len(ds)), ds)
        if not os.path.exists(os.path.join(self.mp, ".weft", "cache", "hints")):
            with self.assertLogs("weft.torch", logging.WARNING):
                self.assertEqual(list(sampler), list(range(len(ds))))

        check_local_checkpoints(self, os.path.join(self.mp, "ckpt"))
        self.unmount(m)

    def test_spoke_mount_takes_hints_through_its_control_file(self):
        import torch
        import torch.utils.data as tud

        files = make_files()
        src = write_tree(os.path.join(self.tmp, "src"), files)
        put_tree(self.bin, self.data, src + "/.", "/data/train")
        hub = Hub(self.bin, self.data)
        self.addCleanup(stop, hub)
        env = dict(os.environ, WEFT_HUB_ACCESS_KEY=ROOT_ACCESS, WEFT_HUB_SECRET_KEY=ROOT_SECRET)
        m = self.mount("--hub", hub.url, "--cache", os.path.join(self.tmp, "cache"),
                       "--portal", "/data", env=env)
        control = os.path.join(self.mp, ".weft", "cache", "hints")
        stats_file = os.path.join(self.mp, ".weft", "cache", "stats")
        self.assertTrue(os.path.exists(control))

        def stats():
            with open(stats_file) as f:
                return json.load(f)

        def hints_issued():
            return next(e for e in stats()["prefetch"]["experts"]
                        if e["name"] == "hints")["issued"]

        ds = weft.WeftDataset(os.path.join(self.mp, "data", "train"), transform=sha)
        self.assertEqual(ds.dataset_path, "/data/train")
        base = torch.utils.data.RandomSampler(ds, generator=torch.Generator().manual_seed(1))
        sampler = weft.HintingSampler(base, ds, spoke="http://127.0.0.1:1")  # file wins
        order = list(iter(sampler))
        self.assertEqual((sampler.hints_sent, sampler.hint_requests, sampler.hint_failures),
                         (FILES, 1, 0))
        deadline = time.monotonic() + 20
        while hints_issued() < FILES and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(hints_issued(), FILES, stats())
        before = stats()
        loader = tud.DataLoader(ds, batch_size=10, sampler=order, num_workers=2,
                                collate_fn=as_list)
        self.assertEqual([d for b in loader for d in b],
                         [sha(files[ds.paths[i]]) for i in order])
        after = stats()
        self.assertEqual(after["reads"] - before["reads"], FILES, after)
        self.assertGreaterEqual(after["hits"] - before["hits"], FILES * 9 // 10, after)

        # A refused hint fails the close with EINVAL and changes nothing.
        fd = os.open(control, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, json.dumps({"dataset": "/data/train",
                                 "paths": ["/elsewhere/x"]}).encode())
        with self.assertRaises(OSError) as cm:
            os.close(fd)
        self.assertEqual(cm.exception.errno, 22)
        # ... which HintingSampler turns into one warning.
        outside = weft.WeftDataset(os.path.join(self.mp, "data", "train"))
        outside.path_of = lambda i: f"/other/{i}"
        bad = weft.HintingSampler(range(3), outside)
        with self.assertLogs("weft.torch", logging.WARNING):
            self.assertEqual(list(bad), [0, 1, 2])
        self.unmount(m)


if __name__ == "__main__":
    unittest.main()


class WalkthroughTest(MountTestCase):
    """The README's "train from a remote dataset", as written there, at a smaller size."""

    def test_train_example_reads_through_a_hub_mount_resumes_and_checkpoints_at_the_hub(self):
        gen = os.path.join(self.tmp, "gen")
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "gen_dataset.py"),
                        "--kind", "images", "--size", "40M", "--seed", "1", "--out", gen,
                        "--quiet"], check=True, timeout=120)
        put_tree(self.bin, self.data, os.path.join(gen, "images"), "/datasets/imagenet-mini")
        hub = Hub(self.bin, self.data)
        self.addCleanup(stop, hub)
        env = dict(os.environ, WEFT_HUB_ACCESS_KEY=ROOT_ACCESS, WEFT_HUB_SECRET_KEY=ROOT_SECRET)
        m = self.mount("--hub", hub.url, "--cache", os.path.join(self.tmp, "gpu-cache"),
                       "--cache-size", "2G", env=env)
        os.makedirs(os.path.join(self.mp, "checkpoints"))
        example = os.path.join(SOURCE_DIR, "python", "examples", "train.py")
        data = os.path.join(self.mp, "datasets", "imagenet-mini")
        ckpt = os.path.join(self.mp, "checkpoints", "tiny.pt")

        def train(epochs):
            proc = subprocess.run(["/usr/bin/python3", example, "--data", data, "--checkpoint",
                                   ckpt, "--epochs", str(epochs)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace"))
            return proc.stdout.decode()

        files = sum(len(names) for _, _, names in os.walk(os.path.join(gen, "images")))
        out = train(2)
        self.assertIn(f"epoch 0: {files} samples", out)
        self.assertIn(f"epoch 1: {files} samples", out)
        self.assertIn(f"hints sent {2 * files}", out)
        with open(os.path.join(self.mp, ".weft", "cache", "stats")) as f:
            stats = json.load(f)
        self.assertEqual(stats["reads"], 2 * files, stats)
        self.assertGreater(stats["hits"], files, stats)  # the second epoch, at least
        out = train(1)
        self.assertIn("resumed from", out)
        self.assertIn(f"epoch 2: {files} samples", out)
        self.unmount(m)
        # The checkpoint lives at the hub: byte for byte what the mount showed.
        import boto3
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url=hub.url, aws_access_key_id=ROOT_ACCESS,
                          aws_secret_access_key=ROOT_SECRET, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        body = s3.get_object(Bucket="checkpoints", Key="tiny.pt")["Body"].read()
        import torch
        state = torch.load(io.BytesIO(body))
        self.assertEqual(state["epoch"], 2)
