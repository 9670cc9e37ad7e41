"""An fsspec file system for Weft: ``weft://BUCKET/KEY`` over the S3 API of a hub or spoke.

After ``import weft`` (or with the package installed, through its ``fsspec.specs`` entry
point) every fsspec user understands ``weft://`` URLs::

    import fsspec, weft
    with fsspec.open("weft://datasets/notes.txt", "w") as f:
        f.write("hello")
    fs = fsspec.filesystem("weft")                 # endpoint and keys from the environment
    fs.ls("datasets")
    fs.cat_file("datasets/notes.txt", start=0, end=2)   # b"he"

Storage options (all optional; the environment fills the rest, see :class:`weft.Client`):
``endpoint``, ``access_key``, ``secret_key``, ``region``, ``ca_file``, ``timeout``, or a
ready ``client`` (s3fs's names ``endpoint_url``, ``key`` and ``secret`` work too). Paths are ``BUCKET/KEY``; the root lists buckets. Directories are key
prefixes (CommonPrefixes). Files open for reading (ranged GETs, ``block_size`` bytes at a
time, pinned to the version current at open) or writing (buffered, stored with one PUT on
close: the object appears whole or not at all).

Errors: FileNotFoundError for a missing bucket or key, PermissionError for refused
credentials, :class:`weft.WeftError` with the S3 code otherwise.
"""

import errno

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from ._client import Client, NotFoundError, WeftError

__all__ = ["WeftFileSystem", "WeftFile"]


class WeftFileSystem(AbstractFileSystem):
    """fsspec file system over a Weft hub or spoke (protocol ``weft``)."""

    protocol = "weft"
    root_marker = ""

    def __init__(self, endpoint=None, access_key=None, secret_key=None, region=None, *,
                 client=None, ca_file=None, timeout=60.0, key=None, secret=None,
                 endpoint_url=None, **kwargs):
        super().__init__(**kwargs)
        if client is None:
            # key=, secret= and endpoint_url= are what s3fs users pass: the same meaning here.
            client = Client(endpoint or endpoint_url, access_key or key, secret_key or secret,
                            region, timeout=timeout, ca_file=ca_file)
        self.client = client

    @classmethod
    def _strip_protocol(cls, path):
        """``weft://bucket/a/b/`` → ``bucket/a/b`` (also accepts ``/bucket/a`` and lists)."""
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("weft://"):
            path = path[len("weft://"):]
        elif path.startswith("weft::"):
            path = path[len("weft::"):]
        return path.strip("/")

    @staticmethod
    def _get_kwargs_from_urls(path):
        return {}

    @staticmethod
    def _split(path):
        bucket, _, key = path.partition("/")
        return bucket, key

    # ---------------------------------------------------------------- listing

    @staticmethod
    def _file_entry(bucket, obj):
        return {"name": f"{bucket}/{obj['key']}", "size": obj["size"], "type": "file",
                "ETag": obj.get("etag"), "LastModified": obj.get("last_modified")}

    def ls(self, path, detail=True, **kwargs):
        """Entries directly under ``path`` (buckets at the root). A file path lists the
        file itself. FileNotFoundError when nothing exists there."""
        path = self._strip_protocol(path)
        if not path:
            entries = [{"name": b, "size": 0, "type": "directory"}
                       for b in self.client.list_buckets()]
        else:
            bucket, key = self._split(path)
            prefix = key + "/" if key else ""
            entries = []
            for item in self.client.iter_objects(bucket, prefix, delimiter="/"):
                if "prefix" in item:
                    name = item["prefix"].rstrip("/")
                    if not key and name == ".weft":
                        continue
                    entries.append({"name": f"{bucket}/{name}", "size": 0,
                                    "type": "directory"})
                elif item["key"] != prefix:
                    entries.append(self._file_entry(bucket, item))
            if not entries and key:
                try:
                    entries = [self._head(bucket, key)]
                except FileNotFoundError:
                    raise FileNotFoundError(errno.ENOENT, "no such file or directory",
                                            path) from None
        entries.sort(key=lambda e: e["name"])
        return entries if detail else [e["name"] for e in entries]

    def _head(self, bucket, key):
        h = self.client.head_object(bucket, key)
        return {"name": f"{bucket}/{key}", "size": h["size"], "type": "file",
                "ETag": h["etag"], "LastModified": h["last_modified"],
                "ContentType": h["content_type"], "VersionId": h["version_id"]}

    def info(self, path, **kwargs):
        """``{"name", "size", "type": "file"|"directory", ...}``; FileNotFoundError when
        ``path`` is neither an object nor a non-empty prefix."""
        path = self._strip_protocol(path)
        if not path:
            return {"name": "", "size": 0, "type": "directory"}
        bucket, key = self._split(path)
        if not key:
            if self.client.head_bucket(bucket):
                return {"name": bucket, "size": 0, "type": "directory"}
            raise FileNotFoundError(errno.ENOENT, "no such bucket", path)
        try:
            return self._head(bucket, key)
        except NotFoundError:
            pass
        for _ in self.client.iter_objects(bucket, key + "/", page_size=1):
            return {"name": path, "size": 0, "type": "directory"}
        raise FileNotFoundError(errno.ENOENT, "no such file or directory", path)

    def exists(self, path, **kwargs):
        try:
            self.info(path)
            return True
        except FileNotFoundError:
            return False

    # ---------------------------------------------------------------- reading

    def cat_file(self, path, start=None, end=None, **kwargs):
        """The bytes of a file, or of ``[start, end)`` (negative values count from the
        end, as in fsspec)."""
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if not key:
            raise IsADirectoryError(errno.EISDIR, "is a bucket", path)
        if (start is not None and start < 0 and end is None):
            return self.client.get_object(bucket, key, start)
        if (start is not None and start < 0) or (end is not None and end < 0):
            size = self.info(path)["size"]
            if start is not None and start < 0:
                start = max(0, size + start)
            if end is not None and end < 0:
                end = max(0, size + end)
        return self.client.get_object(bucket, key, start, end)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None,
              **kwargs):
        if mode not in ("rb", "wb"):
            raise NotImplementedError(f"weft:// files open as 'rb' or 'wb', not {mode!r}")
        if not autocommit:
            raise NotImplementedError("weft:// files commit on close (autocommit=True)")
        return WeftFile(self, path, mode, block_size=block_size or "default",
                        cache_options=cache_options, **kwargs)

    # ---------------------------------------------------------------- changing

    def pipe_file(self, path, value, **kwargs):
        """Stores ``value`` (bytes) as the file ``path`` in one PUT."""
        bucket, key = self._split(self._strip_protocol(path))
        if not key:
            raise IsADirectoryError(errno.EISDIR, "is a bucket", path)
        self.client.put_object(bucket, key, value)
        self.invalidate_cache(path)

    def cp_file(self, path1, path2, **kwargs):
        """Server-side copy: no bytes move through this process."""
        b1, k1 = self._split(self._strip_protocol(path1))
        b2, k2 = self._split(self._strip_protocol(path2))
        self.client.copy_object(b1, k1, b2, k2)
        self.invalidate_cache(path2)

    def rm_file(self, path):
        """Deletes one object (no error when it does not exist)."""
        bucket, key = self._split(self._strip_protocol(path))
        if not key:
            raise IsADirectoryError(errno.EISDIR, "use rmdir() to delete a bucket", path)
        self.client.delete_object(bucket, key)
        self.invalidate_cache(path)

    def _rm(self, path):
        self.rm_file(path)

    def rm(self, path, recursive=False, maxdepth=None):
        """Deletes files; with ``recursive`` everything below a prefix (buckets stay: use
        rmdir). A directory without ``recursive`` is IsADirectoryError."""
        paths = path if isinstance(path, list) else [path]
        for p in paths:
            p = self._strip_protocol(p)
            info = self.info(p)
            if info["type"] == "directory":
                if not recursive:
                    raise IsADirectoryError(errno.EISDIR, "use recursive=True", p)
                for f in self.find(p, maxdepth=maxdepth):
                    self.rm_file(f)
            else:
                self.rm_file(p)

    def mkdir(self, path, create_parents=True, **kwargs):
        """``mkdir("bucket")`` creates the bucket (FileExistsError when it exists). Below a
        bucket nothing needs creating (directories appear with their first object): the
        bucket is created when missing if ``create_parents``, else FileNotFoundError."""
        bucket, key = self._split(self._strip_protocol(path))
        if not bucket:
            raise ValueError("cannot create the root")
        if not key:
            try:
                self.client.create_bucket(bucket)
            except WeftError as e:
                if e.code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise FileExistsError(errno.EEXIST, "bucket exists", bucket) from None
                raise
        elif not self.client.head_bucket(bucket):
            if not create_parents:
                raise FileNotFoundError(errno.ENOENT, "no such bucket", bucket)
            self.client.create_bucket(bucket, exist_ok=True)
        self.invalidate_cache("")

    def makedirs(self, path, exist_ok=False):
        bucket, key = self._split(self._strip_protocol(path))
        if not self.client.head_bucket(bucket):
            self.client.create_bucket(bucket, exist_ok=True)
        elif not key and not exist_ok:
            raise FileExistsError(errno.EEXIST, "bucket exists", bucket)

    def rmdir(self, path):
        """Deletes an empty bucket; below a bucket it is a no-op (empty prefixes vanish)."""
        bucket, key = self._split(self._strip_protocol(path))
        if not key:
            self.client.delete_bucket(bucket)
            self.invalidate_cache("")

    def modified(self, path):
        import email.utils
        lm = self.info(path).get("LastModified")
        if not lm:
            raise IsADirectoryError(errno.EISDIR, "directories have no mtime", path)
        return email.utils.parsedate_to_datetime(lm)

    def ukey(self, path):
        return self.info(path).get("ETag") or super().ukey(path)


class WeftFile(AbstractBufferedFile):
    """A file of :class:`WeftFileSystem`: ranged reads, or a buffer PUT whole on close."""

    DEFAULT_BLOCK_SIZE = 8 << 20

    def _fetch_range(self, start, end):
        bucket, key = self.fs._split(self.path)
        etag = (self.details or {}).get("ETag")
        return self.fs.client.get_object(bucket, key, start, end, if_match=etag or None)

    def _initiate_upload(self):
        pass

    def _upload_chunk(self, final=False):
        if not final:
            return False  # keep buffering: one PUT on close
        self.buffer.seek(0)
        bucket, key = self.fs._split(self.path)
        if not key:
            raise IsADirectoryError(errno.EISDIR, "is a bucket", self.path)
        self.fs.client.put_object(bucket, key, self.buffer)
        self.fs.invalidate_cache(self.path)
        return True
