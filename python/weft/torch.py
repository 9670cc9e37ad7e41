"""PyTorch integration: datasets that read from Weft, a sampler that tells a spoke's
NeuralCache what the next epoch will read, and crash-safe checkpoints.

Every class and function accepts either a local path (for example under a ``weft mount``) or
a ``weft://BUCKET/PREFIX`` URL, read through the S3 API of a hub or spoke with
:class:`weft.Client` (endpoint and keys from ``WEFT_ENDPOINT``, ``WEFT_ACCESS_KEY``,
``WEFT_SECRET_KEY`` unless a ``client=`` is given).

- :class:`WeftDataset` — map-style dataset: one item per file, sorted by path.
- :class:`WeftShardDataset` — iterable dataset over tar shards (WebDataset layout), split
  across ranks and DataLoader workers without overlap or loss.
- :class:`HintingSampler` — wraps any sampler; at the start of each epoch sends the epoch's
  read order to the spoke (REST) or to the mount's ``.weft/cache/hints`` control file.
- :func:`save_checkpoint` / :func:`load_checkpoint` — a checkpoint is replaced atomically:
  a crash mid-save leaves the previous one intact.
"""

import copy
import errno
import io
import json
import logging
import os
import posixpath
import random
import stat
import tarfile
import tempfile

import torch
import torch.utils.data as _data

from ._client import Client, parse_url

__all__ = ["WeftDataset", "WeftShardDataset", "HintingSampler", "save_checkpoint",
           "load_checkpoint", "find_mount_root"]

_log = logging.getLogger("weft.torch")

#: The most paths one hint request carries (the spoke takes at most 1 MiB of JSON a call).
MAX_HINT_PATHS = 10000
_MAX_HINT_BYTES = 900_000


def _is_url(path):
    return isinstance(path, str) and path.startswith("weft://")


def find_mount_root(path):
    """The mount point of the weft mount that holds ``path`` (the nearest directory at or
    above it containing ``.weft/snapshots``), or None when ``path`` is not on a weft mount."""
    d = os.path.realpath(path)
    while True:
        if os.path.isdir(os.path.join(d, ".weft", "snapshots")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _volume_path(mount, local):
    rel = os.path.relpath(local, mount)
    if rel == ".":
        return "/"
    return "/" + rel.replace(os.sep, "/")


def _normalise_extensions(extensions):
    if extensions is None:
        return None
    if isinstance(extensions, str):
        extensions = [extensions]
    return tuple(("" if e.startswith(".") else ".") + e.lower() for e in extensions)


class WeftDataset(_data.Dataset):
    """A map-style dataset with one item per regular file below ``root``.

    ``root`` is a local directory (typically inside a ``weft mount``) or
    ``weft://BUCKET/PREFIX`` (read over S3; ``client`` or the environment says where).
    Items are sorted by their path relative to ``root`` (byte order); ``extensions``
    (e.g. ``[".jpg", ".png"]``, case-insensitive) keeps only matching files. Directories
    named ``.weft`` (a mount's control tree) are skipped.

    ``snapshot=NAME`` reads the files as they were in snapshot NAME: through a mount from
    ``<mountpoint>/.weft/snapshots/NAME/``, which shows the subtree the snapshot was taken
    of (a snapshot of ``/data`` shows ``/data/train`` as ``NAME/train``; the mount names
    that subtree in the ``user.weft.snapshot_path`` extended attribute); over S3 from the bucket's key prefix ``.weft/snapshots/NAME/`` followed by
    the full key. A snapshot directory can also be passed as ``root`` itself.

    ``dataset[i]`` returns ``transform(data)`` where ``data`` is the file's bytes (the bytes
    themselves without a transform). ``paths`` lists the relative paths; ``path_of(i)`` the
    volume path the spoke knows the file by (what :class:`HintingSampler` sends).

    Raises FileNotFoundError when ``root`` (or the snapshot) does not exist or holds no
    file, NotADirectoryError when it is a file, ValueError for ``snapshot=`` on a local
    directory that is not on a weft mount, and the client's errors (PermissionError, ...)
    for URLs. Reads raise FileNotFoundError when a file disappeared since the listing."""

    def __init__(self, root, *, snapshot=None, transform=None, extensions=None, client=None):
        self.root = os.fspath(root)
        self.snapshot = snapshot
        self.transform = transform
        self.extensions = _normalise_extensions(extensions)
        self.client = None
        self.mount_root = None
        self.bucket = None
        if snapshot is not None and (not snapshot or "/" in snapshot):
            raise ValueError(f"invalid snapshot name {snapshot!r}")
        if _is_url(self.root):
            self._init_url(client)
        else:
            self._init_local()
        if not self._rel:
            what = f"snapshot {snapshot!r} of {self.root}" if snapshot else self.root
            raise FileNotFoundError(errno.ENOENT, f"no files in {what}"
                                    + (f" with extensions {list(self.extensions)}"
                                       if self.extensions else ""), self.root)

    def _keep(self, rel):
        return self.extensions is None or rel.lower().endswith(self.extensions)

    def _init_url(self, client):
        self.client = client or Client()
        self.bucket, prefix = parse_url(self.root)
        key_prefix = prefix + "/" if prefix else ""
        if self.snapshot:
            key_prefix = f".weft/snapshots/{self.snapshot}/" + key_prefix
        rel, keys = [], []
        for obj in self.client.iter_objects(self.bucket, key_prefix):
            key = obj["key"]
            r = key[len(key_prefix):]
            if not r or r.endswith("/") or not key.startswith(key_prefix):
                continue
            if not self.snapshot and key.startswith(".weft/"):
                continue
            if self._keep(r):
                rel.append(r)
                keys.append(key)
        order = sorted(range(len(rel)), key=rel.__getitem__)
        self._rel = [rel[i] for i in order]
        self._keys = [keys[i] for i in order]
        vol = "/" + self.bucket + ("/" + prefix if prefix else "")
        if self.snapshot:
            vol = f"/.weft/snapshots/{self.snapshot}" + vol
        self.dataset_path = vol

    def _init_local(self):
        if not os.path.exists(self.root):
            raise FileNotFoundError(errno.ENOENT, "no such directory", self.root)
        if not os.path.isdir(self.root):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.root)
        real = os.path.realpath(self.root)
        self.mount_root = find_mount_root(real)
        base = real
        if self.snapshot:
            if self.mount_root is None:
                raise ValueError(f"snapshot={self.snapshot!r} needs a root on a weft mount "
                                 f"(no .weft/snapshots above {self.root}) or a weft:// URL")
            rel_root = os.path.relpath(real, self.mount_root)
            parts = [] if rel_root == "." else rel_root.split(os.sep)
            if parts[:1] == [".weft"]:
                raise ValueError(f"{self.root} is already inside the mount's .weft tree; "
                                 "pass the live path with snapshot=")
            snap = os.path.join(self.mount_root, ".weft", "snapshots", self.snapshot)
            if not os.path.isdir(snap):
                raise FileNotFoundError(errno.ENOENT, f"no snapshot {self.snapshot!r} on "
                                        f"the mount at {self.mount_root}", snap)
            base = self._snapshot_dir(snap, parts, real)
        self.base = base
        rel = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != ".weft"]
            for name in filenames:
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                r = os.path.relpath(full, base).replace(os.sep, "/")
                if self._keep(r):
                    rel.append(r)
        rel.sort()
        self._rel = rel
        self._files = [os.path.join(base, *r.split("/")) for r in rel]
        self.dataset_path = (_volume_path(self.mount_root, base)
                             if self.mount_root is not None else None)

    def _snapshot_dir(self, snap, parts, live):
        """The directory of ``snap`` (a mount's .weft/snapshots/NAME) that holds the live
        directory ``live`` (``parts`` below the mountpoint). A snapshot of a subtree shows that
        subtree at its root (a snapshot of /data holds /data/train as ``NAME/train``); the
        mount names the subtree in the extended attribute ``user.weft.snapshot_path``."""
        try:
            covered = os.getxattr(snap, "user.weft.snapshot_path").decode()
        except OSError as e:
            raise OSError(e.errno, f"cannot tell which directory snapshot {self.snapshot!r} "
                          "covers (is this a weft mount?)", snap) from e
        wanted = "/" + "/".join(parts)
        prefix = covered.rstrip("/") + "/"
        if wanted != covered and not wanted.startswith(prefix) and covered != "/":
            raise FileNotFoundError(errno.ENOENT, f"snapshot {self.snapshot!r} covers "
                                    f"{covered}, which does not hold {wanted}", live)
        below = wanted[len(covered):].strip("/") if covered != "/" else wanted.strip("/")
        full = os.path.join(snap, *[p for p in below.split("/") if p])
        if not os.path.isdir(full):
            raise FileNotFoundError(errno.ENOENT, f"{wanted} did not exist in snapshot "
                                    f"{self.snapshot!r}", full)
        return full

    def __len__(self):
        return len(self._rel)

    @property
    def paths(self):
        """The items' paths relative to ``root``, in item order."""
        return list(self._rel)

    def path_of(self, index):
        """The volume path of item ``index`` as a spoke or mount names it (``/BUCKET/KEY``
        for URLs, the path below the mountpoint with a leading ``/`` for mounts;
        snapshot items are under ``/.weft/snapshots/NAME/``). None for a local directory
        that is not on a weft mount."""
        if self.dataset_path is None:
            return None
        rel = self._rel[index]
        return self.dataset_path.rstrip("/") + "/" + rel

    def read(self, index):
        """The raw bytes of item ``index`` (no transform)."""
        if self.client is not None:
            return self.client.get_object(self.bucket, self._keys[index])
        with open(self._files[index], "rb") as f:
            return f.read()

    def __getitem__(self, index):
        data = self.read(index)
        return self.transform(data) if self.transform is not None else data

    def __repr__(self):
        snap = f", snapshot={self.snapshot!r}" if self.snapshot else ""
        return f"WeftDataset({self.root!r}{snap}, {len(self)} files)"


class WeftShardDataset(_data.IterableDataset):
    """An iterable dataset over tar shards in the WebDataset layout.

    ``shards`` is a path or URL, or a list of them: a local ``.tar`` file, a local directory
    (its ``*.tar`` files), ``weft://BUCKET/KEY.tar``, or a ``weft://BUCKET/PREFIX`` (every
    object ending in ``.tar`` below it). Consecutive tar members with the same key (the
    member's directory plus its basename up to the first dot) form one sample::

        {"__key__": "train/000017", "__shard__": "weft://data/shards/s-0003.tar",
         "jpg": b"...", "cls": b"7"}

    Members without a dot in their basename and non-files are skipped. Each shard is
    streamed once, front to back (``tarfile`` mode ``"r|*"``; remote shards are read in
    8 MiB ranges pinned to the version that was current when the shard was opened).

    Splitting: the shard list (shuffled with ``seed`` + the epoch from :meth:`set_epoch`
    when ``shuffle``, the same on every rank) is dealt to ranks first (``rank``/``world_size``
    from the arguments, else ``torch.distributed`` when initialised, else 0/1), then among
    that rank's DataLoader workers. Every shard goes to exactly one (rank, worker): no
    sample is read twice or lost; with fewer shards than ranks × workers some read nothing.

    Raises FileNotFoundError when no shard is found, ValueError for a bad rank/world_size
    or a shard repeating an extension within one key, and tarfile.ReadError for a
    corrupt shard."""

    def __init__(self, shards, *, rank=None, world_size=None, shuffle=False, seed=0,
                 client=None):
        super().__init__()
        if isinstance(shards, (str, os.PathLike)):
            shards = [shards]
        if (rank is None) != (world_size is None):
            raise ValueError("give both rank and world_size, or neither")
        if world_size is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
        self.rank, self.world_size = rank, world_size
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self.client = client
        expanded = []
        for s in shards:
            s = os.fspath(s)
            if _is_url(s):
                bucket, key = parse_url(s)
                if key.endswith(".tar"):
                    expanded.append(f"weft://{bucket}/{key}")
                    continue
                prefix = key + "/" if key else ""
                found = [f"weft://{bucket}/{o['key']}"
                         for o in self._client().iter_objects(bucket, prefix)
                         if o["key"].endswith(".tar") and not o["key"].startswith(".weft/")]
                if not found:
                    raise FileNotFoundError(errno.ENOENT, "no .tar shards under", s)
                expanded.extend(sorted(found))
            elif os.path.isdir(s):
                found = sorted(os.path.join(s, n) for n in os.listdir(s)
                               if n.endswith(".tar") and os.path.isfile(os.path.join(s, n)))
                if not found:
                    raise FileNotFoundError(errno.ENOENT, "no .tar shards in", s)
                expanded.extend(found)
            elif os.path.isfile(s):
                expanded.append(s)
            else:
                raise FileNotFoundError(errno.ENOENT, "no such shard", s)
        if not expanded:
            raise FileNotFoundError(errno.ENOENT, "no shards given", str(shards))
        self.shards = expanded

    def _client(self):
        if self.client is None:
            self.client = Client()
        return self.client

    def set_epoch(self, epoch):
        """Sets the epoch that seeds the shard shuffle (call it on every rank each epoch)."""
        self.epoch = epoch

    def _rank_world(self):
        if self.world_size is not None:
            return self.rank, self.world_size
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def shards_for(self, rank, world_size, worker=0, num_workers=1):
        """The shards (rank, worker) reads this epoch, in reading order."""
        order = list(self.shards)
        if self.shuffle:
            random.Random(f"weft-shards:{self.seed}:{self.epoch}").shuffle(order)
        return order[rank::world_size][worker::num_workers]

    def __iter__(self):
        rank, world = self._rank_world()
        info = _data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for shard in self.shards_for(rank, world, worker, workers):
            yield from self.samples(shard)

    def _open(self, shard):
        if _is_url(shard):
            bucket, key = parse_url(shard)
            return self._client().open_object(bucket, key)
        return open(shard, "rb", buffering=1 << 20)

    def samples(self, shard):
        """Yields the samples of one shard, in member order."""
        with self._open(shard) as f, tarfile.open(fileobj=f, mode="r|*") as tar:
            key, sample = None, None
            for member in tar:
                if not member.isfile():
                    continue
                name = member.name
                while name.startswith("./"):
                    name = name[2:]
                directory, base = posixpath.split(name)
                if "." not in base.lstrip("."):
                    continue
                lead = len(base) - len(base.lstrip("."))
                stem, ext = base[lead:].split(".", 1)
                stem = base[:lead] + stem
                k = posixpath.join(directory, stem) if directory else stem
                if k != key:
                    if sample is not None:
                        yield sample
                    key, sample = k, {"__key__": k, "__shard__": shard}
                if ext in sample:
                    raise ValueError(f"{shard}: member {member.name!r} repeats extension "
                                     f"{ext!r} of sample {k!r}")
                sample[ext] = tar.extractfile(member).read()
            if sample is not None:
                yield sample


def _resolve_paths(dataset, indices):
    """(dataset path, [volume path per index]) for a WeftDataset or a Subset of one."""
    if isinstance(dataset, _data.Subset):
        return _resolve_paths(dataset.dataset, [dataset.indices[i] for i in indices])
    if not hasattr(dataset, "path_of"):
        raise TypeError(f"{type(dataset).__name__} has no path_of(); HintingSampler needs a "
                        "WeftDataset (or a Subset of one)")
    return dataset, [dataset.path_of(i) for i in indices]


def _pieces(paths):
    piece, size = [], 0
    for p in paths:
        n = len(json.dumps(p, ensure_ascii=False).encode()) + 1
        if piece and (len(piece) >= MAX_HINT_PATHS or size + n > _MAX_HINT_BYTES):
            yield piece
            piece, size = [], 0
        piece.append(p)
        size += n
    if piece:
        yield piece


class HintingSampler(_data.Sampler):
    """Wraps a sampler and declares each epoch's read order to the spoke's NeuralCache, so
    the spoke fetches ahead exactly what the job will read next.

    ``sampler`` is any sampler (RandomSampler, DistributedSampler, a list of indices...);
    ``set_epoch`` is forwarded. Each ``iter()`` (the start of an epoch) materialises the
    epoch's indices, maps them with ``dataset.path_of`` to volume paths and sends them as
    an explicit path list (pieces of at most 10000 paths: the first replaces the job's
    declared order, the rest append), then yields the same indices.

    When the wrapped sampler's order is a function of its epoch and the caller moves it with
    ``set_epoch`` (DistributedSampler, as PyTorch asks), the next epoch's order is declared
    too, appended (``declare_next=False`` turns this off): the spoke then fetches the head of
    the next epoch while this one ends, instead of after the next epoch's hint. Without it
    each epoch began with ~0.1 s of waiting over a 40 ms link (bench/neuralcache_e2e.py).
    The next ``iter()`` declares that epoch's actual order again, replacing the guess.

    Where the hints go:

    - ``dataset`` on a weft mount whose NeuralCache is active (an embedded spoke): written
      to ``<mountpoint>/.weft/cache/hints``;
    - otherwise ``POST /_weft/api/v1/cache/hints`` at ``spoke`` (URL), else ``$WEFT_SPOKE``,
      else (for a ``weft://`` dataset) the endpoint the dataset reads from. ``client`` (a
      :class:`weft.Client`) gives the endpoint and keys to use; by default the dataset's
      keys, or the environment's.

    ``job`` names the job the order is for (default: the caller's principal, so every rank
    reading through one mount or with one key is one job). ``rank`` is this process's rank:
    by default the wrapped sampler's (``DistributedSampler.rank`` of ``num_replicas``), else
    the initialised ``torch.distributed`` group's, else 0 of 1. Each rank declares only its
    own share with its rank and the world size, and its hints replace only that rank's
    earlier ones, so the spoke sees the whole job's order.

    Hinting never breaks training: a failure (no spoke, wrong key, unreachable URL...) is
    logged once as a warning on the ``weft.torch`` logger and the indices are yielded as
    usual. Counters: ``hints_sent`` (paths delivered), ``hint_requests`` (successful calls),
    ``hint_failures``, ``hints_accepted`` (sum of the spoke's ``accepted_items``; REST only)
    and ``last_reply``.

    Under torchrun, ``LOCAL_WORLD_SIZE`` (the ranks on this node) is sent too, so a spoke or
    mount serving one node of a larger job knows when all of its ranks declared.
    """

    def __init__(self, sampler, dataset, *, spoke=None, job=None, client=None,
                 declare_next=True, rank=None):
        self.sampler = sampler
        self.rank, self.world_size = _rank_of(sampler)
        if rank is not None:
            self.rank = int(rank)
            self.world_size = max(self.world_size, self.rank + 1)
        # The ranks on this node (torchrun sets LOCAL_WORLD_SIZE): when a job spans nodes,
        # each node's spoke or mount hears only these, and knows the job whole once they all
        # declared.
        try:
            self.local_world_size = max(0, int(os.environ.get("LOCAL_WORLD_SIZE", "0")))
        except ValueError:
            self.local_world_size = 0
        self.declare_next = declare_next
        self.epoch = None
        self.declared_next_epoch = None  # the epoch last declared ahead, if any
        self.dataset = dataset
        self.spoke = spoke or os.environ.get("WEFT_SPOKE")
        self.job = job
        self.client = client
        self.hints_sent = 0
        self.hint_requests = 0
        self.hint_failures = 0
        self.hints_accepted = 0
        self.last_reply = None
        self._warned = False
        self._rest_client = None

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Forwards to the wrapped sampler (DistributedSampler needs it every epoch)."""
        self.epoch = epoch
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self):
        indices = list(iter(self.sampler))
        self._send(indices)
        following = self._next_epoch_indices()
        if following is not None:
            self._send(following, append=True)
            self.declared_next_epoch = self.epoch + 1
        return iter(indices)

    def _next_epoch_indices(self):
        """The order of epoch ``self.epoch + 1``, when a sampler moved by ``set_epoch`` gives
        it: a shallow copy (the dataset it holds is shared, not copied) set to that epoch."""
        if not self.declare_next or self.epoch is None or not hasattr(self.sampler, "set_epoch"):
            return None
        try:
            twin = copy.copy(self.sampler)
            twin.set_epoch(self.epoch + 1)
            return list(iter(twin))
        except Exception as e:  # a guess ahead must never stop training either
            _log.debug("weft: could not compute the next epoch's order: %s", e)
            return None

    def _destination(self, base):
        mount = getattr(base, "mount_root", None)
        if mount is not None:
            control = os.path.join(mount, ".weft", "cache", "hints")
            if os.path.exists(control):
                return ("file", control)
        if self._rest_client is None:
            if self.client is not None:
                self._rest_client = self.client
            else:
                ds_client = getattr(base, "client", None)
                endpoint = self.spoke or (ds_client.endpoint if ds_client else None)
                if endpoint is None:
                    where = (f"the mount at {mount} has no NeuralCache (.weft/cache/hints)"
                             if mount else f"{getattr(base, 'root', base)!r} is not on a "
                             "weft mount")
                    raise RuntimeError(f"{where}; pass spoke= or set WEFT_SPOKE")
                if ds_client is not None:
                    self._rest_client = Client(endpoint, ds_client.access_key,
                                               ds_client.secret_key, ds_client.region,
                                               timeout=10)
                else:
                    self._rest_client = Client(endpoint, timeout=10)
        return ("rest", self._rest_client)

    def _send(self, indices, append=False):
        where = "the spoke"
        try:
            base, paths = _resolve_paths(self.dataset, indices)
            dataset_path = getattr(base, "dataset_path", None)
            if dataset_path is None or any(p is None for p in paths):
                raise RuntimeError(f"{getattr(base, 'root', base)!r} is neither on a weft "
                                   "mount nor a weft:// URL: no volume paths to hint")
            kind, target = self._destination(base)
            where = target if kind == "file" else target.endpoint
            for n, piece in enumerate(_pieces(paths)):
                body = {"dataset": dataset_path, "paths": piece, "append": append or n > 0,
                        "rank": self.rank, "world_size": self.world_size}
                if self.local_world_size:
                    body["local_world_size"] = self.local_world_size
                if self.job is not None:
                    body["job"] = self.job
                if kind == "file":
                    self._write_control(target, body)
                    self.last_reply = None
                else:
                    self.last_reply = target.rest("POST", "cache/hints", body)
                    self.hints_accepted += int(self.last_reply.get("accepted_items", 0))
                self.hints_sent += len(piece)
                self.hint_requests += 1
        except Exception as e:  # hinting must never stop training
            self.hint_failures += 1
            if not self._warned:
                self._warned = True
                _log.warning("weft: could not send read-order hints to %s: %s (training "
                             "continues; further failures are logged at debug level)",
                             where, f"{type(e).__name__}: {e}")
            else:
                _log.debug("weft: hints to %s failed again: %s", where,
                           f"{type(e).__name__}: {e}")

    @staticmethod
    def _write_control(path, body):
        data = json.dumps(body, ensure_ascii=False).encode()
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass
            raise
        try:
            os.close(fd)  # the mount answers a refused hint by failing the close (EINVAL)
        except OSError as e:
            raise OSError(e.errno, f"the mount refused the hints ({e.strerror})",
                          path) from None


def _rank_of(sampler):
    """(rank, world size) a sampler deals for: DistributedSampler's, else the initialised
    process group's, else (0, 1)."""
    rank = getattr(sampler, "rank", None)
    world = getattr(sampler, "num_replicas", None)
    if isinstance(rank, int) and isinstance(world, int) and 0 <= rank < world:
        return rank, world
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # no torch.distributed: a single process
        pass
    return 0, 1


def _fsync_dir(directory):
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EROFS):
            raise
    finally:
        os.close(fd)


def _umask():
    try:  # Linux: read it without changing it (os.umask would race with other threads)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _object_of(url, client):
    """(client, bucket, key) of a ``weft://BUCKET/KEY`` checkpoint; ValueError without a key."""
    bucket, key = parse_url(url)
    if not key:
        raise ValueError(f"no key in {url!r}")
    return client or Client(), bucket, key


def save_checkpoint(obj, path, *, client=None):
    """Saves ``obj`` with ``torch.save`` to ``path`` so that the file is always either the
    previous checkpoint or the complete new one, even if the process is killed mid-save.

    Local paths (including a weft mount): written to a hidden temporary file in the same
    directory (``.<name>.<random>.tmp``), flushed and fsynced, renamed over ``path`` with
    ``os.replace``, then the directory is fsynced. On any error the temporary file is
    removed and the error re-raised; a process killed mid-save can leave a stale
    ``.<name>.*.tmp`` beside the intact previous checkpoint.

    ``weft://BUCKET/KEY``: serialised to a local temporary file, then stored with one S3
    PUT, which the server commits whole or not at all (objects up to 5 GiB).

    Raises the ``torch.save`` error, OSError (e.g. no space left) or the client's errors."""
    path = os.fspath(path)
    if _is_url(path):
        client, bucket, key = _object_of(path, client)
        with tempfile.TemporaryFile() as f:
            torch.save(obj, f)
            f.flush()
            f.seek(0)
            client.put_object(bucket, key, f, content_type="application/octet-stream")
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        try:
            os.fchmod(fd, 0o666 & ~_umask())
        except OSError:
            pass
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def load_checkpoint(path, *, map_location=None, client=None, **kwargs):
    """Loads a checkpoint written by :func:`save_checkpoint` (or any ``torch.save`` file)
    from a local path or ``weft://BUCKET/KEY``; ``map_location`` and other keyword
    arguments go to ``torch.load``. Raises FileNotFoundError when it does not exist."""
    path = os.fspath(path)
    if _is_url(path):
        client, bucket, key = _object_of(path, client)
        data = client.get_object(bucket, key)
        return torch.load(io.BytesIO(data), map_location=map_location, **kwargs)
    return torch.load(path, map_location=map_location, **kwargs)
