"""A small client for a Weft hub or spoke: the S3 API (signed with AWS Signature Version 4)
and the parts of the REST API that training jobs use (tokens, NeuralCache hints and stats).

Standard library only (``http.client``, ``hashlib``, ``hmac``). One keep-alive connection per
thread and per process: a client created before ``fork()`` (a PyTorch ``DataLoader`` worker)
opens a fresh connection in the child instead of sharing the parent's socket, and a pickled
client (``spawn`` workers) carries only its settings.

Configuration comes from the arguments or the environment:

=====================  ===================================================================
``endpoint``           ``WEFT_ENDPOINT``, e.g. ``http://127.0.0.1:9000`` (hub or spoke)
``access_key``         ``WEFT_ACCESS_KEY``, else ``WEFT_ROOT_ACCESS_KEY``
``secret_key``         ``WEFT_SECRET_KEY``, else ``WEFT_ROOT_SECRET_KEY``
``region``             ``WEFT_REGION``, else ``us-east-1``
``ca_file``            ``WEFT_CA_FILE``: PEM CA bundle for an ``https://`` endpoint
=====================  ===================================================================

Errors: :class:`NotFoundError` (a ``FileNotFoundError``) for ``NoSuchKey``, ``NoSuchBucket``
and any 404; :class:`AccessDeniedError` (a ``PermissionError``) for ``AccessDenied``, bad
signatures and any 401/403; :class:`WeftError` with the server's code and message otherwise;
``ConnectionError`` when the endpoint cannot be reached.
"""

import datetime
import errno
import hashlib
import hmac
import http.client
import io
import json
import os
import ssl
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

__all__ = ["Client", "WeftError", "NotFoundError", "AccessDeniedError", "parse_url",
           "EMPTY_SHA256"]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_UNRESERVED = "-_.~"
_COPY_BLOCK = 1 << 20


class WeftError(Exception):
    """An error answered by a Weft server.

    Attributes: ``code`` (the S3 or REST error code, e.g. ``"ObjectConflict"``),
    ``message`` (the server's explanation), ``status`` (HTTP status) and ``resource``
    (``bucket/key`` or the REST endpoint the request was for)."""

    def __init__(self, code="", message="", status=None, resource=None):
        self.code, self.message, self.status, self.resource = code, message, status, resource
        super().__init__(code)
        self.args = (code, message, status, resource)

    def __str__(self):
        text = self.code if not self.message else f"{self.code}: {self.message}"
        if self.resource:
            text += f" ({self.resource})"
        if self.status:
            text += f" [HTTP {self.status}]"
        return text

    def __reduce__(self):
        return (self.__class__, (self.code, self.message, self.status, self.resource))


class NotFoundError(WeftError, FileNotFoundError):
    """The bucket, key or endpoint does not exist (S3 ``NoSuchKey``/``NoSuchBucket``, 404)."""

    def __init__(self, code="NotFound", message="", status=404, resource=None):
        WeftError.__init__(self, code, message, status, resource)
        self.errno, self.strerror, self.filename = errno.ENOENT, message or code, resource


class AccessDeniedError(WeftError, PermissionError):
    """The credentials are wrong or do not allow this request (401/403)."""

    def __init__(self, code="AccessDenied", message="", status=403, resource=None):
        WeftError.__init__(self, code, message, status, resource)
        self.errno, self.strerror, self.filename = errno.EACCES, message or code, resource


_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchBucket", "NotFound", "NoSuchUpload", "NoSuchVersion",
                    "NoSuchEndpoint"}
_DENIED_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                 "Unauthenticated", "InvalidCredentials"}


def parse_url(url):
    """Splits ``weft://BUCKET/KEY`` (or ``BUCKET/KEY``) into ``(bucket, key)``; the key has
    no leading or trailing ``/`` and may be empty. Raises ValueError for other schemes."""
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme != "weft":
            raise ValueError(f"not a weft:// URL: {url!r}")
    else:
        rest = url
    rest = rest.strip("/")
    if not rest:
        raise ValueError(f"no bucket in {url!r}")
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


def _quote(s, safe=_UNRESERVED):
    return urllib.parse.quote(s, safe=safe)


def _local_name(tag):
    return tag.rsplit("}", 1)[-1]


def _child_text(elem, name, default=None):
    for child in elem:
        if _local_name(child.tag) == name:
            return child.text or ""
    return default


class Client:
    """A Weft S3 + REST client. Thread-safe and fork-safe; cheap to pickle.

    ``Client()`` reads the endpoint and keys from the environment (see the module doc).
    ``timeout`` (seconds) bounds each socket operation. Raises ValueError when no endpoint is
    configured."""

    def __init__(self, endpoint=None, access_key=None, secret_key=None, region=None, *,
                 timeout=60.0, ca_file=None):
        endpoint = endpoint or os.environ.get("WEFT_ENDPOINT")
        if not endpoint:
            raise ValueError("no Weft endpoint: pass endpoint= or set WEFT_ENDPOINT "
                             "(e.g. http://127.0.0.1:9000)")
        self.endpoint = endpoint.rstrip("/")
        parsed = urllib.parse.urlsplit(self.endpoint)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"Weft endpoint must be http://HOST[:PORT] or https://...: "
                             f"{endpoint!r}")
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port
        self._netloc = parsed.netloc
        self._base = parsed.path.rstrip("/")
        self.access_key = (access_key or os.environ.get("WEFT_ACCESS_KEY")
                           or os.environ.get("WEFT_ROOT_ACCESS_KEY"))
        self.secret_key = (secret_key or os.environ.get("WEFT_SECRET_KEY")
                           or os.environ.get("WEFT_ROOT_SECRET_KEY"))
        self.region = region or os.environ.get("WEFT_REGION") or "us-east-1"
        self.timeout = timeout
        self.ca_file = ca_file or os.environ.get("WEFT_CA_FILE")
        self._init_runtime()

    def _init_runtime(self):
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conn_lock = threading.Lock()
        self._open = []  # (pid, connection) of every open connection this object made
        self._signing_keys = {}
        self._token = None  # (token, expires at monotonic seconds, pid)

    def __getstate__(self):
        state = dict(self.__dict__)
        for name in ("_local", "_lock", "_signing_keys", "_token", "_open",
                     "_conn_lock"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_runtime()

    def __repr__(self):
        return f"weft.Client({self.endpoint!r}, access_key={self.access_key!r})"

    # ---------------------------------------------------------------- connections

    def _connection(self):
        local = self._local
        pid = os.getpid()
        if getattr(local, "pid", None) != pid or getattr(local, "conn", None) is None:
            # After fork() the parent's sockets must not be shared: start over. Closing the
            # inherited copies only releases this process's descriptors; the parent's
            # connections stay open.
            with self._conn_lock:
                inherited = [c for p, c in self._open if p != pid]
                self._open = [(p, c) for p, c in self._open if p == pid]
            for conn in inherited:
                try:
                    conn.close()
                except OSError:
                    pass
            local.pid = pid
            if self._scheme == "https":
                ctx = ssl.create_default_context(cafile=self.ca_file)
                local.conn = http.client.HTTPSConnection(self._host, self._port,
                                                         timeout=self.timeout, context=ctx)
            else:
                local.conn = http.client.HTTPConnection(self._host, self._port,
                                                        timeout=self.timeout)
            with self._conn_lock:
                self._open.append((pid, local.conn))
        return local.conn

    def _drop_connection(self):
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._conn_lock:
                self._open = [(p, c) for p, c in self._open if c is not conn]
            try:
                conn.close()
            except OSError:
                pass

    def close(self):
        """Closes the connections this client opened in this process, in every thread (a
        later request opens a new one). Call it when no request is in flight."""
        pid = os.getpid()
        with self._conn_lock:
            mine = [c for p, c in self._open if p == pid]
        for conn in mine:
            try:
                conn.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # ---------------------------------------------------------------- signing

    def _signing_key(self, datestamp):
        key = self._signing_keys.get(datestamp)
        if key is None:
            k = hmac.new(("AWS4" + self.secret_key).encode(), datestamp.encode(),
                         hashlib.sha256).digest()
            for part in (self.region, "s3", "aws4_request"):
                k = hmac.new(k, part.encode(), hashlib.sha256).digest()
            key = self._signing_keys[datestamp] = k
        return key

    def _sign(self, method, raw_path, query, headers, payload_hash):
        if not self.access_key or not self.secret_key:
            raise ValueError("no Weft credentials: pass access_key=/secret_key= or set "
                             "WEFT_ACCESS_KEY and WEFT_SECRET_KEY (or WEFT_ROOT_ACCESS_KEY "
                             "and WEFT_ROOT_SECRET_KEY)")
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        datestamp = amz_date[:8]
        headers["x-amz-date"] = amz_date
        headers["x-amz-content-sha256"] = payload_hash
        signed = {k.lower(): " ".join(str(v).strip().split()) for k, v in headers.items()
                  if k.lower() == "host" or k.lower().startswith("x-amz-")
                  or k.lower() in ("content-md5", "content-type", "range")}
        names = sorted(signed)
        canonical_headers = "".join(f"{n}:{signed[n]}\n" for n in names)
        signed_headers = ";".join(names)
        canonical_query = "&".join(f"{k}={v}" for k, v in sorted(
            (_quote(k), _quote(v)) for k, v in query))
        canonical = "\n".join([method, raw_path, canonical_query, canonical_headers,
                               signed_headers, payload_hash])
        scope = f"{datestamp}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()])
        signature = hmac.new(self._signing_key(datestamp), to_sign.encode(),
                             hashlib.sha256).hexdigest()
        headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                    f"SignedHeaders={signed_headers}, Signature={signature}")

    # ---------------------------------------------------------------- transport

    def _request(self, method, raw_path, query=(), headers=None, body=b"", *,
                 payload_hash=None, sign=True, resource=None, ok=(200,)):
        """Sends one request; returns (status, headers, body bytes). Raises the matching
        exception (see _raise) on a status not in ``ok``."""
        query = list(query)
        url = self._base + raw_path
        if query:
            url += "?" + "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query)
        is_file = not isinstance(body, (bytes, bytearray, memoryview))
        if is_file:
            start = body.tell()
        for attempt in range(3):
            hdrs = {"Host": self._netloc}
            hdrs.update(headers or {})
            if sign:
                ph = payload_hash
                if ph is None:
                    ph = hashlib.sha256(body).hexdigest() if not is_file else "UNSIGNED-PAYLOAD"
                self._sign(method, self._base + raw_path, query, hdrs, ph)
            if is_file:
                body.seek(start)
            elif body or method in ("PUT", "POST"):
                hdrs["Content-Length"] = str(len(body))
            conn = self._connection()
            reused = conn.sock is not None
            try:
                conn.request(method, url, body=body if (is_file or body) else None,
                             headers=hdrs)
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.RemoteDisconnected, http.client.BadStatusLine,
                    ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as e:
                self._drop_connection()
                if reused and attempt < 2:
                    continue  # the server closed an idle keep-alive connection: retry
                raise ConnectionError(f"Weft at {self.endpoint}: {method} "
                                      f"{resource or raw_path}: {e}") from e
            except ConnectionRefusedError as e:
                self._drop_connection()
                raise ConnectionError(f"cannot reach Weft at {self.endpoint}: {e}") from e
            except BaseException:
                self._drop_connection()
                raise
            if resp.status in ok:
                return resp.status, resp.headers, data
            self._raise(resp.status, data, resource or raw_path)
        raise AssertionError("unreachable")

    @staticmethod
    def _raise(status, data, resource):
        code, message = "", ""
        text = data.decode("utf-8", "replace").strip() if data else ""
        if text.startswith("<"):
            try:
                root = ET.fromstring(text)
                code = _child_text(root, "Code", "") or ""
                message = _child_text(root, "Message", "") or ""
            except ET.ParseError:
                message = text[:500]
        elif text.startswith("{"):
            try:
                obj = json.loads(text)
                code, message = obj.get("error", ""), obj.get("message", "")
            except ValueError:
                message = text[:500]
        elif text:
            message = text[:500]
        if not code:
            code = {400: "BadRequest", 401: "Unauthenticated", 403: "AccessDenied",
                    404: "NotFound", 409: "Conflict", 412: "PreconditionFailed",
                    416: "InvalidRange", 503: "Unavailable"}.get(status, f"HTTP{status}")
        if status == 404 or code in _NOT_FOUND_CODES:
            raise NotFoundError(code, message, status, resource)
        if status in (401, 403) or code in _DENIED_CODES:
            raise AccessDeniedError(code, message, status, resource)
        raise WeftError(code, message, status, resource)

    @staticmethod
    def _object_path(bucket, key=""):
        if not bucket or "/" in bucket:
            raise ValueError(f"invalid bucket name {bucket!r}")
        path = "/" + bucket
        if key:
            path += "/" + _quote(key, safe="/" + _UNRESERVED)
        return path

    # ---------------------------------------------------------------- S3: objects

    def get_object(self, bucket, key, start=None, end=None, *, if_match=None):
        """Returns the bytes of ``bucket/key``, or of ``[start, end)`` when given (``end``
        None = to the end; a negative ``start`` with no ``end`` = the last ``-start``
        bytes). A range past the end returns what exists (``b""`` from the end on).
        ``if_match`` (an ETag) refuses a changed object with WeftError PreconditionFailed."""
        headers = {}
        if start is not None or end is not None:
            if start is not None and start < 0:
                if end is not None:
                    raise ValueError("a negative start cannot have an end")
                headers["Range"] = f"bytes={start}"
            else:
                start = start or 0
                if end is not None:
                    if end <= start:
                        return b""
                    headers["Range"] = f"bytes={start}-{end - 1}"
                elif start:
                    headers["Range"] = f"bytes={start}-"
        if if_match:
            headers["If-Match"] = if_match
        try:
            _, _, data = self._request("GET", self._object_path(bucket, key), headers=headers,
                                       payload_hash=EMPTY_SHA256, ok=(200, 206),
                                       resource=f"{bucket}/{key}")
        except WeftError as e:
            if e.code == "InvalidRange":
                return b""
            raise
        return data

    def head_object(self, bucket, key):
        """Returns ``{"size", "etag", "last_modified", "content_type", "version_id",
        "metadata"}`` of ``bucket/key``; NotFoundError when it does not exist."""
        _, h, _ = self._request("HEAD", self._object_path(bucket, key),
                                payload_hash=EMPTY_SHA256, resource=f"{bucket}/{key}")
        return {
            "size": int(h.get("Content-Length", 0)),
            "etag": (h.get("ETag") or "").strip('"'),
            "last_modified": h.get("Last-Modified"),
            "content_type": h.get("Content-Type"),
            "version_id": h.get("x-amz-version-id"),
            "metadata": {k[len("x-amz-meta-"):]: v for k, v in h.items()
                         if k.lower().startswith("x-amz-meta-")},
        }

    def put_object(self, bucket, key, data, *, content_type=None, metadata=None):
        """Stores ``data`` (bytes, or a seekable binary file read from its current position
        to the end) as ``bucket/key`` in one request: the new version appears whole or not
        at all. The payload's SHA-256 is signed, so a corrupted upload is refused.
        Returns the ETag."""
        headers = {}
        if content_type:
            headers["Content-Type"] = content_type
        for k, v in (metadata or {}).items():
            headers["x-amz-meta-" + k] = str(v)
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = bytes(data)
            payload_hash = hashlib.sha256(data).hexdigest()
        else:
            start = data.tell()
            h = hashlib.sha256()
            size = 0
            while True:
                piece = data.read(_COPY_BLOCK)
                if not piece:
                    break
                h.update(piece)
                size += len(piece)
            data.seek(start)
            payload_hash = h.hexdigest()
            headers["Content-Length"] = str(size)
        _, h, _ = self._request("PUT", self._object_path(bucket, key), headers=headers,
                                body=data, payload_hash=payload_hash,
                                resource=f"{bucket}/{key}")
        return (h.get("ETag") or "").strip('"')

    def delete_object(self, bucket, key):
        """Deletes ``bucket/key`` (no error when it does not exist, as in S3)."""
        self._request("DELETE", self._object_path(bucket, key), payload_hash=EMPTY_SHA256,
                      ok=(200, 204), resource=f"{bucket}/{key}")

    def copy_object(self, src_bucket, src_key, bucket, key):
        """Server-side copy (no bytes move through this client). Returns the new ETag."""
        src = "/" + src_bucket + "/" + _quote(src_key, safe="/" + _UNRESERVED)
        _, _, data = self._request("PUT", self._object_path(bucket, key),
                                   headers={"x-amz-copy-source": src},
                                   payload_hash=EMPTY_SHA256, resource=f"{bucket}/{key}")
        root = ET.fromstring(data)
        return (_child_text(root, "ETag", "") or "").strip('"')

    def open_object(self, bucket, key, *, block_size=8 << 20):
        """A read-only, seekable binary file over ``bucket/key`` that reads ``block_size``
        ranges on demand, pinned to the version current at open (a concurrent overwrite
        makes later reads fail with WeftError PreconditionFailed instead of mixing
        versions). NotFoundError when the object does not exist."""
        info = self.head_object(bucket, key)
        raw = _RangedObject(self, bucket, key, info["size"], info["etag"])
        return io.BufferedReader(raw, buffer_size=block_size)

    # ---------------------------------------------------------------- S3: listings

    def iter_objects(self, bucket, prefix="", *, delimiter=None, start_after=None,
                     page_size=1000):
        """Yields every object under ``prefix`` in S3 key order as ``{"key", "size",
        "etag", "last_modified"}``, and with a ``delimiter`` each common prefix as
        ``{"prefix": "dir/"}``; follows continuation tokens. NotFoundError when the bucket
        does not exist."""
        token = None
        while True:
            query = [("list-type", "2"), ("encoding-type", "url"),
                     ("max-keys", str(page_size))]
            if prefix:
                query.append(("prefix", prefix))
            if delimiter:
                query.append(("delimiter", delimiter))
            if start_after and not token:
                query.append(("start-after", start_after))
            if token:
                query.append(("continuation-token", token))
            _, _, data = self._request("GET", self._object_path(bucket), query=query,
                                       payload_hash=EMPTY_SHA256, resource=bucket)
            root = ET.fromstring(data)
            encoded = _child_text(root, "EncodingType") == "url"
            dec = urllib.parse.unquote_plus if encoded else (lambda s: s)
            for elem in root:
                name = _local_name(elem.tag)
                if name == "Contents":
                    yield {"key": dec(_child_text(elem, "Key", "")),
                           "size": int(_child_text(elem, "Size", "0") or 0),
                           "etag": (_child_text(elem, "ETag", "") or "").strip('"'),
                           "last_modified": _child_text(elem, "LastModified")}
                elif name == "CommonPrefixes":
                    yield {"prefix": dec(_child_text(elem, "Prefix", ""))}
            truncated = (_child_text(root, "IsTruncated", "false") or "").lower() == "true"
            token = _child_text(root, "NextContinuationToken")
            if not truncated or not token:
                return

    def list_objects(self, bucket, prefix="", delimiter=None):
        """Returns ``(objects, prefixes)``: every object dict (see iter_objects) and every
        common prefix string under ``prefix``, all pages."""
        objects, prefixes = [], []
        for item in self.iter_objects(bucket, prefix, delimiter=delimiter):
            if "prefix" in item:
                prefixes.append(item["prefix"])
            else:
                objects.append(item)
        return objects, prefixes

    # ---------------------------------------------------------------- S3: buckets

    def list_buckets(self):
        """Names of the buckets this key may see."""
        _, _, data = self._request("GET", "/", payload_hash=EMPTY_SHA256, resource="/")
        root = ET.fromstring(data)
        out = []
        for elem in root.iter():
            if _local_name(elem.tag) == "Bucket":
                out.append(_child_text(elem, "Name", ""))
        return out

    def head_bucket(self, bucket):
        """True when ``bucket`` exists (and is visible to this key); False when not."""
        try:
            self._request("HEAD", self._object_path(bucket), payload_hash=EMPTY_SHA256,
                          resource=bucket)
            return True
        except NotFoundError:
            return False

    def create_bucket(self, bucket, *, exist_ok=False):
        """Creates ``bucket`` (a top-level directory). With ``exist_ok``, an existing bucket
        of this owner is not an error."""
        try:
            self._request("PUT", self._object_path(bucket), payload_hash=EMPTY_SHA256,
                          resource=bucket)
        except WeftError as e:
            if exist_ok and e.code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                return
            raise

    def delete_bucket(self, bucket):
        """Deletes an empty bucket (WeftError BucketNotEmpty otherwise)."""
        self._request("DELETE", self._object_path(bucket), payload_hash=EMPTY_SHA256,
                      ok=(200, 204), resource=bucket)

    # ---------------------------------------------------------------- REST API

    def token(self, *, ttl_seconds=3600, refresh=False):
        """A bearer token for the REST API (``POST /_weft/api/v1/tokens`` with this
        client's access key), cached until shortly before it expires."""
        with self._lock:
            now = time.monotonic()
            cached = self._token
            if (not refresh and cached and cached[2] == os.getpid()
                    and cached[1] > now + 60):
                return cached[0]
            if not self.access_key or not self.secret_key:
                raise ValueError("no Weft credentials for the REST API: set WEFT_ACCESS_KEY "
                                 "and WEFT_SECRET_KEY")
            reply = self._rest_call("POST", "tokens",
                                    {"access_key_id": self.access_key,
                                     "secret_access_key": self.secret_key,
                                     "ttl_seconds": ttl_seconds}, token=None)
            expires_in = float(reply.get("expires_in", ttl_seconds))
            self._token = (reply["token"], now + expires_in, os.getpid())
            return reply["token"]

    def _rest_call(self, method, endpoint, body, token, query=()):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        data = b"" if body is None else json.dumps(body).encode()
        _, _, out = self._request(method, "/_weft/api/v1/" + endpoint, query=query,
                                  headers=headers, body=data, sign=False,
                                  resource="/_weft/api/v1/" + endpoint,
                                  ok=(200, 201, 204))
        return json.loads(out) if out else None

    def rest(self, method, endpoint, body=None, *, query=()):
        """Calls ``/_weft/api/v1/<endpoint>`` with a bearer token (obtained and renewed
        automatically) and returns the parsed JSON reply (None for 204)."""
        try:
            return self._rest_call(method, endpoint, body, self.token(), query)
        except AccessDeniedError as e:
            if e.code != "Unauthenticated":
                raise
            return self._rest_call(method, endpoint, body, self.token(refresh=True), query)

    def cache_hints(self, dataset, paths=None, *, append=False, job=None, **seed_mode):
        """Declares a read order to a spoke's NeuralCache (``POST cache/hints``): either
        explicit ``paths`` (absolute volume paths, or relative to ``dataset``) or seed mode
        (``seed=, epoch=, rank=, world_size=, sampler=``). Returns the spoke's reply
        ``{"job", "accepted_items", "unknown_paths", "unknown"}``. A hub (no NeuralCache)
        answers NotFoundError NoSuchEndpoint; a malformed hint WeftError InvalidArgument."""
        body = {"dataset": dataset}
        if paths is not None:
            body["paths"] = list(paths)
        if append:
            body["append"] = True
        if job is not None:
            body["job"] = job
        body.update(seed_mode)
        return self.rest("POST", "cache/hints", body)

    def cache_stats(self):
        """The spoke's NeuralCache state (``GET cache``): policy, bytes kept, reads, hits,
        hit ratio and prefetch counters (see docs/neuralcache.md)."""
        return self.rest("GET", "cache")


class _RangedObject(io.RawIOBase):
    """A seekable raw file over one object version, read with ranged GETs."""

    def __init__(self, client, bucket, key, size, etag):
        super().__init__()
        self._client, self._bucket, self._key = client, bucket, key
        self._size, self._etag, self._pos = size, etag, 0
        self.name = f"weft://{bucket}/{key}"

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def readinto(self, buf):
        if self._pos >= self._size or len(buf) == 0:
            return 0
        end = min(self._size, self._pos + len(buf))
        data = self._client.get_object(self._bucket, self._key, self._pos, end,
                                       if_match=self._etag or None)
        n = len(data)
        buf[:n] = data
        self._pos += n
        return n
