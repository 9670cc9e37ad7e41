"""Hub and spokes as real processes: `weft serve`, a WAN emulator (`weft dev wan`, 20 ms each
way) in front of it, spoke A (`weft spoke`) behind the emulator and spoke B chained to spoke A.
Clients are boto3 against each node's S3 endpoint."""

import json
import os
import re
import signal
import threading
import time
import unittest

from botocore.exceptions import ClientError, EndpointConnectionError

import s3lib
from s3lib import ROOT_ACCESS, ROOT_SECRET, REGION, S3TestCase, WeftProcess

SPOKE_ACCESS = "WEFTSPOKEROOTKEY0001"
SPOKE_SECRET = "weft-spoke-root-secret-0123456789abcdefgh"
LEASE_MS = 1000
HUB_TIMEOUT_MS = 2000


class Wan(WeftProcess):
    """`weft dev wan`: ready when it prints the address it listens on."""

    what = "weft dev wan"
    ready_pattern = re.compile(rb"WAN link (\d+\.\d+\.\d+\.\d+:\d+) ->")

    def __init__(self, bin_path, target, delay_ms, capture_dir=None):
        argv = [bin_path, "dev", "wan", "--listen", "127.0.0.1:0", "--target", target,
                "--delay-ms", str(delay_ms)]
        if capture_dir:
            argv += ["--capture-dir", capture_dir]
        super().__init__(argv, dict(os.environ))
        self.url = "http://" + self.url

    def link(self, up):
        self.proc.send_signal(signal.SIGUSR2 if up else signal.SIGUSR1)
        want = b"link up" if up else b"link down"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if any(want in line for line in self.lines):
                return
            time.sleep(0.01)
        raise RuntimeError("the WAN emulator did not switch the link")


class Spoke(WeftProcess):
    what = "weft spoke"

    def __init__(self, bin_path, hub_url, cache, site, portals, hub_key, tags=(), extra=()):
        env = dict(os.environ)
        env.update({"WEFT_HUB_ACCESS_KEY": hub_key[0], "WEFT_HUB_SECRET_KEY": hub_key[1],
                    "WEFT_ROOT_ACCESS_KEY": SPOKE_ACCESS, "WEFT_ROOT_SECRET_KEY": SPOKE_SECRET})
        argv = [bin_path, "spoke", "--hub", hub_url, "--cache", cache, "--site", site,
                "--listen", "127.0.0.1:0", "--hub-timeout-ms", str(HUB_TIMEOUT_MS)]
        for p in portals:
            argv += ["--portal", p]
        if tags:
            argv += ["--tags", ",".join(tags)]
        super().__init__(argv + list(extra), env)


class FabricTestCase(S3TestCase):
    hub_args = ("--lease-ms", str(LEASE_MS))

    def setUp(self):
        super().setUp()
        self.s3_hub = self.client(self.hub.url, ROOT_ACCESS, ROOT_SECRET)
        self.s3_hub.create_bucket(Bucket="data")
        self.wan = self.start(Wan(self.bin, f"127.0.0.1:{self.hub.port}", 20,
                                  os.path.join(self.tmp, "capture")))
        self.spoke_a = self.start(Spoke(self.bin, self.wan.url, os.path.join(self.tmp, "a"),
                                        "site-a", ["/data"], (ROOT_ACCESS, ROOT_SECRET)))
        self.spoke_b = self.start(Spoke(self.bin, self.spoke_a.url, os.path.join(self.tmp, "b"),
                                        "site-b", ["/data"], (SPOKE_ACCESS, SPOKE_SECRET)))
        self.s3_a = self.client(self.spoke_a.url, SPOKE_ACCESS, SPOKE_SECRET)
        self.s3_b = self.client(self.spoke_b.url, SPOKE_ACCESS, SPOKE_SECRET)

    def start(self, process):
        self.addCleanup(self._stop_quietly, process)
        return process

    def client(self, url, access, secret):
        import boto3
        from botocore.config import Config
        return boto3.client(
            "s3", endpoint_url=url, aws_access_key_id=access, aws_secret_access_key=secret,
            region_name=REGION,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          signature_version="s3v4", connect_timeout=10, read_timeout=30))

    def get(self, s3, key, bucket="data"):
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


class ByteIdentityTest(FabricTestCase):
    def test_a_write_at_a_spoke_reads_identically_at_the_hub_and_the_chained_spoke(self):
        body = os.urandom(3 * 1024 * 1024 + 17)
        put = self.s3_a.put_object(Bucket="data", Key="ckpt/step-1.bin", Body=body)
        self.assertEqual(self.get(self.s3_hub, "ckpt/step-1.bin"), body)
        self.assertEqual(self.get(self.s3_b, "ckpt/step-1.bin"), body)
        head = self.s3_hub.head_object(Bucket="data", Key="ckpt/step-1.bin")
        self.assertEqual(head["ETag"], put["ETag"])

        # And the other way: the hub's write reads identically at both spokes, ranges too.
        other = os.urandom(1024 * 1024)
        self.s3_hub.put_object(Bucket="data", Key="train/shard-0.tar", Body=other)
        self.assertEqual(self.get(self.s3_a, "train/shard-0.tar"), other)
        self.assertEqual(self.get(self.s3_b, "train/shard-0.tar"), other)
        part = self.s3_b.get_object(Bucket="data", Key="train/shard-0.tar",
                                    Range="bytes=1000-2999")["Body"].read()
        self.assertEqual(part, other[1000:3000])
        # A write at the chained spoke goes through spoke A to the hub.
        self.s3_b.put_object(Bucket="data", Key="from-b", Body=b"chained")
        self.assertEqual(self.get(self.s3_hub, "from-b"), b"chained")
        keys = {o["Key"] for o in self.s3_a.list_objects_v2(Bucket="data")["Contents"]}
        self.assertEqual(keys, {"ckpt/step-1.bin", "train/shard-0.tar", "from-b"})

        # The hub lists the spoke attached to it (B is attached to A), with what it moved.
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ROOT_ACCESS, WEFT_ROOT_SECRET_KEY=ROOT_SECRET)
        out = self.run_tool([self.bin, "--server", self.hub.url, "--json", "spokes"], env=env)
        spokes = json.loads(out.stdout)
        self.assertEqual([(s["site"], s["portals"]) for s in spokes], [("site-a", ["/data"])])
        self.assertGreater(spokes[0]["bytes_sent"], len(other))
        self.assertGreater(spokes[0]["bytes_received"], len(body))
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=SPOKE_ACCESS, WEFT_ROOT_SECRET_KEY=SPOKE_SECRET)
        out = self.run_tool([self.bin, "--server", self.spoke_a.url, "spokes"], env=env)
        self.assertIn("site-b", out.stdout.decode())

        # The spoke's Prometheus counters say what it moved and what it served from cache.
        import urllib.request
        with urllib.request.urlopen(self.spoke_a.url + "/_weft/metrics") as r:
            metrics = dict(line.rsplit(" ", 1) for line in r.read().decode().splitlines()
                           if line and not line.startswith("#"))
        self.assertGreater(int(metrics["weft_spoke_chunks_fetched_total"]), 0)
        self.assertGreater(int(metrics["weft_spoke_wire_bytes_fetched_total"]), len(other))
        self.assertGreater(int(metrics["weft_spoke_metadata_misses_total"]), 0)
        self.assertGreater(int(metrics["weft_spoke_wire_bytes_uploaded_total"]), len(body))
        self.assertGreaterEqual(int(metrics["weft_spoke_lease_renewals_total"]), 0)
        self.assertGreater(int(metrics["weft_spoke_dirs_listed_whole_total"]), 0)
        self.assertGreaterEqual(int(metrics["weft_spoke_dirs_revalidated_by_changes_total"]), 0)


class LinearizabilityTest(FabricTestCase):
    """Writers at the hub and at spoke A update one object with increasing counters while
    readers at every node record what they saw; no read may return a value that a write
    completed before the read began had already overwritten."""

    def test_no_read_is_older_than_a_write_completed_before_it(self):
        key = "counter"
        self.s3_hub.put_object(Bucket="data", Key=key, Body=b"init:0")
        writes = {b"init:0": (0.0, time.monotonic())}
        reads = []
        lock = threading.Lock()
        stop = time.monotonic() + 8
        errors = []

        def writer(name, s3):
            i = 0
            while time.monotonic() < stop:
                i += 1
                value = f"{name}:{i}".encode()
                start = time.monotonic()
                try:
                    s3.put_object(Bucket="data", Key=key, Body=value)
                except Exception as e:  # noqa: BLE001 - report any client failure
                    errors.append(f"write {value!r}: {e}")
                    return
                with lock:
                    writes[value] = (start, time.monotonic())

        def reader(name, s3):
            while time.monotonic() < stop:
                start = time.monotonic()
                try:
                    value = self.get(s3, key)
                except Exception as e:  # noqa: BLE001
                    errors.append(f"read at {name}: {e}")
                    return
                with lock:
                    reads.append((name, start, time.monotonic(), value))

        threads = [threading.Thread(target=writer, args=("hub", self.s3_hub)),
                   threading.Thread(target=writer, args=("a", self.client(
                       self.spoke_a.url, SPOKE_ACCESS, SPOKE_SECRET)))]
        for name, url, access, secret in [("hub", self.hub.url, ROOT_ACCESS, ROOT_SECRET),
                                          ("a", self.spoke_a.url, SPOKE_ACCESS, SPOKE_SECRET),
                                          ("b", self.spoke_b.url, SPOKE_ACCESS, SPOKE_SECRET)]:
            for _ in range(2):
                threads.append(threading.Thread(target=reader, args=(
                    name, self.client(url, access, secret))))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertGreater(len(writes), 20)
        self.assertGreater(len(reads), 100)
        by_node = {}
        for name, *_ in reads:
            by_node[name] = by_node.get(name, 0) + 1
        self.assertEqual(set(by_node), {"hub", "a", "b"})

        violations = []
        for name, start, end, value in reads:
            self.assertIn(value, writes, f"read at {name} returned a value never written")
            w_start, w_end = writes[value]
            if w_start > end:
                violations.append(f"{name} read {value!r} before its write began")
            for other, (o_start, o_end) in writes.items():
                # `other` began after `value`'s write finished and finished before the read
                # began: it certainly overwrote `value`, so the read is stale.
                if o_start > w_end and o_end < start:
                    violations.append(f"{name} read {value!r} at {start:.3f}, but {other!r} "
                                      f"had completed at {o_end:.3f}")
                    break
        self.assertEqual(violations[:5], [], f"{len(violations)} stale reads of {len(reads)}")


class LinkLossTest(FabricTestCase):
    def test_cut_link_fails_clearly_after_lease_expiry_and_recovers(self):
        # Spoke C, also behind the WAN, prefers stale answers to errors.
        tolerant = self.start(Spoke(self.bin, self.wan.url, os.path.join(self.tmp, "c"), "site-c",
                                    ["/data"], (ROOT_ACCESS, ROOT_SECRET), extra=["--stale-ok"]))
        s3_c = self.client(tolerant.url, SPOKE_ACCESS, SPOKE_SECRET)
        self.s3_a.put_object(Bucket="data", Key="k", Body=b"before")
        self.assertEqual(self.get(self.s3_a, "k"), b"before")
        self.assertEqual(self.get(s3_c, "k"), b"before")
        acked = {"k": b"before"}

        # A writer at spoke A keeps writing 256 KiB objects while the link is cut under it.
        stop_writing = threading.Event()
        writer_acked = {}

        def keep_writing():
            s3 = self.client(self.spoke_a.url, SPOKE_ACCESS, SPOKE_SECRET)
            i = 0
            while not stop_writing.is_set():
                body = os.urandom(256 * 1024)
                try:
                    s3.put_object(Bucket="data", Key=f"stream/{i}", Body=body)
                    writer_acked[f"stream/{i}"] = body
                except (ClientError, EndpointConnectionError):
                    pass
                i += 1

        writer = threading.Thread(target=keep_writing)
        writer.start()
        self.addCleanup(writer.join)  # runs second: a failed check must not leave it writing
        self.addCleanup(stop_writing.set)
        # (The writer's first object creates data/stream/, a change to data/ that drops what
        # spoke C had cached there; once it is acknowledged, C reads k again so it has
        # something to be stale about. A fixed sleep was too short on a slow build (TSan).)
        deadline = time.monotonic() + 30
        while not writer_acked and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(writer_acked, "the writer got no object acknowledged")
        self.assertEqual(self.get(s3_c, "k"), b"before")
        listed = s3_c.list_objects_v2(Bucket="data", Prefix="k")
        self.assertNotIn("warning", listed["ResponseMetadata"]["HTTPHeaders"])
        status, token = s3lib.rest(tolerant.url, "POST", "tokens", {
            "access_key_id": SPOKE_ACCESS, "secret_access_key": SPOKE_SECRET})
        self.assertEqual(status, 200)
        token = token["token"]
        status, fresh = s3lib.rest(tolerant.url, "GET", "namespace/list?path=/data", token=token)
        self.assertEqual(status, 200)
        self.assertNotIn("stale", fresh)
        self.wan.link(up=False)
        # The hub's write waits for spoke A's lease to run out (A cannot acknowledge), then
        # commits: it is not blocked for longer than a lease.
        start = time.monotonic()
        self.s3_hub.put_object(Bucket="data", Key="k", Body=b"after")
        self.assertLess(time.monotonic() - start, LEASE_MS / 1000 + 2)
        # Spoke A's lease has expired: it must not serve "before" any more; it fails clearly.
        with self.assertRaises(ClientError) as cm:
            self.get(self.s3_a, "k")
        self.assertEqual(cm.exception.response["Error"]["Code"], "ServiceUnavailable")
        self.assertIn("unreachable", cm.exception.response["Error"]["Message"])
        # --stale-ok answers from what it had, and says so.
        stale = s3_c.get_object(Bucket="data", Key="k")
        self.assertEqual(stale["Body"].read(), b"before")
        self.assertTrue(stale["ResponseMetadata"]["HTTPHeaders"]["warning"].startswith("110 "))
        # Listings too (S3 and REST), as docs/fabric.md promises.
        listed = s3_c.list_objects_v2(Bucket="data", Prefix="k")
        self.assertEqual([o["Key"] for o in listed["Contents"]], ["k"])
        self.assertTrue(listed["ResponseMetadata"]["HTTPHeaders"]["warning"].startswith("110 "))
        status, old = s3lib.rest(tolerant.url, "GET", "namespace/list?path=/data", token=token)
        self.assertEqual(status, 200)
        self.assertTrue(old["stale"])
        # Writes at the spoke are refused rather than acknowledged without the hub.
        for i in range(3):
            try:
                self.s3_a.put_object(Bucket="data", Key=f"during-{i}", Body=b"x")
                acked[f"during-{i}"] = b"x"
            except ClientError as e:
                self.assertEqual(e.response["Error"]["Code"], "ServiceUnavailable")

        self.wan.link(up=True)
        deadline = time.monotonic() + 15
        while True:
            try:
                value = self.get(self.s3_a, "k")
                break
            except ClientError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.assertEqual(value, b"after")
        self.s3_a.put_object(Bucket="data", Key="k2", Body=b"recovered")
        # The streaming writer gets acknowledgements again too.
        recovered_at = len(writer_acked)
        deadline = time.monotonic() + 30
        while len(writer_acked) <= recovered_at and time.monotonic() < deadline:
            time.sleep(0.05)
        stop_writing.set()
        writer.join()
        self.assertGreater(len(writer_acked), recovered_at)
        acked.update(writer_acked)
        acked["k2"] = b"recovered"
        acked["k"] = b"after"
        # Nothing acknowledged is lost: every acknowledged write is at the hub.
        for key, body in acked.items():
            self.assertEqual(self.get(self.s3_hub, key), body, key)


class MultipartAtSpokeTest(FabricTestCase):
    """Multipart uploads at a spoke stage their parts inside the bucket's portal, so every part
    is written through to the hub like any other write and the completed object is the hub's."""

    def spoke_admin(self, *args):
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=SPOKE_ACCESS, WEFT_ROOT_SECRET_KEY=SPOKE_SECRET)
        out = self.run_tool([self.bin, "--server", self.spoke_a.url, "--json", *args], env=env)
        return json.loads(out.stdout) if out.stdout.strip() else None

    def test_multipart_upload_at_spokes_lands_at_the_hub(self):
        import io
        from boto3.s3.transfer import TransferConfig
        mib = 1024 * 1024
        parts = TransferConfig(multipart_threshold=5 * mib, multipart_chunksize=5 * mib,
                               max_concurrency=4)
        body = os.urandom(20 * mib + 5)
        self.s3_a.upload_fileobj(io.BytesIO(body), "data", "ckpt/model.pt", Config=parts)
        self.assertEqual(self.get(self.s3_hub, "ckpt/model.pt"), body)
        self.assertTrue(self.s3_hub.head_object(Bucket="data", Key="ckpt/model.pt")["ETag"]
                        .endswith('-5"'))
        # Through the chained spoke too (B -> A -> hub).
        other = os.urandom(11 * mib)
        self.s3_b.upload_fileobj(io.BytesIO(other), "data", "ckpt/from-b.pt", Config=parts)
        self.assertEqual(self.get(self.s3_hub, "ckpt/from-b.pt"), other)
        self.assertEqual(self.get(self.s3_a, "ckpt/from-b.pt"), other)

        # An upload in progress at the spoke is the hub's too; it is no object anywhere.
        up = self.s3_a.create_multipart_upload(Bucket="data", Key="ckpt/pending.pt")
        self.s3_a.upload_part(Bucket="data", Key="ckpt/pending.pt", UploadId=up["UploadId"],
                              PartNumber=1, Body=b"x" * 1000)
        listed = self.s3_hub.list_multipart_uploads(Bucket="data").get("Uploads", [])
        self.assertEqual([(u["Key"], u["UploadId"]) for u in listed],
                         [("ckpt/pending.pt", up["UploadId"])])
        for s3 in (self.s3_hub, self.s3_a, self.s3_b):
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket="data")["Contents"]]
            self.assertEqual(keys, ["ckpt/from-b.pt", "ckpt/model.pt"])
            with self.assertRaises(ClientError) as cm:
                s3.get_object(Bucket="data", Key=".weft-uploads/" + up["UploadId"] + "/00001")
            self.assertEqual(cm.exception.response["Error"]["Code"], "InvalidArgument")
        parts_listed = self.s3_hub.list_parts(Bucket="data", Key="ckpt/pending.pt",
                                              UploadId=up["UploadId"])["Parts"]
        self.assertEqual([p["Size"] for p in parts_listed], [1000])
        self.s3_hub.abort_multipart_upload(Bucket="data", Key="ckpt/pending.pt",
                                           UploadId=up["UploadId"])
        self.assertEqual(self.s3_a.list_multipart_uploads(Bucket="data").get("Uploads", []), [])

        # A user who may only read at the spoke is refused with AccessDenied, not NoSuchKey.
        self.spoke_admin("user", "create", "reader")
        key = self.spoke_admin("key", "create", "reader")
        self.spoke_admin("rule", "add", "user:reader", "/data/", "read,list")
        reader = self.client(self.spoke_a.url, key["access_key_id"], key["secret_access_key"])
        with self.assertRaises(ClientError) as cm:
            reader.create_multipart_upload(Bucket="data", Key="ckpt/nope.pt")
        self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
        with self.assertRaises(Exception) as cm:  # boto3's S3UploadFailedError
            reader.upload_fileobj(io.BytesIO(body), "data", "ckpt/nope.pt", Config=parts)
        self.assertIn("AccessDenied", str(cm.exception))

        # A bucket holding only an abandoned upload can be deleted.
        self.s3_hub.create_bucket(Bucket="scratch")
        self.s3_hub.create_multipart_upload(Bucket="scratch", Key="lost")
        self.s3_hub.delete_bucket(Bucket="scratch")
        self.assertNotIn("scratch", [b["Name"] for b in self.s3_hub.list_buckets()["Buckets"]])


class S3SettingsAtSpokeTest(FabricTestCase):
    """Object tags and versions, set through a spoke's S3, are the hub's: one namespace."""

    def tags(self, s3, key):
        return {t["Key"]: t["Value"] for t in
                s3.get_object_tagging(Bucket="data", Key=key)["TagSet"]}

    def test_tags_and_delete_markers_through_spokes(self):
        self.s3_a.put_object(Bucket="data", Key="t/k", Body=b"x", Tagging="team=ml&tier=gold")
        self.assertEqual(self.tags(self.s3_hub, "t/k"), {"team": "ml", "tier": "gold"})
        self.s3_b.put_object_tagging(Bucket="data", Key="t/k", Tagging={"TagSet": [
            {"Key": "stage", "Value": "eval"}]})
        self.assertEqual(self.tags(self.s3_hub, "t/k"), {"stage": "eval"})
        self.assertEqual(self.tags(self.s3_a, "t/k"), {"stage": "eval"})
        self.assertEqual(self.s3_a.head_object(Bucket="data", Key="t/k")["ResponseMetadata"]
                         ["HTTPHeaders"]["x-amz-tagging-count"], "1")
        self.assertEqual(self.get(self.s3_a, "t/k"), b"x")

        self.s3_hub.put_bucket_versioning(Bucket="data",
                                          VersioningConfiguration={"Status": "Enabled"})
        v1 = self.s3_a.put_object(Bucket="data", Key="t/v", Body=b"one")["VersionId"]
        marker = self.s3_a.delete_object(Bucket="data", Key="t/v")
        self.assertTrue(marker["DeleteMarker"])
        listed = self.s3_hub.list_object_versions(Bucket="data", Prefix="t/v")
        self.assertEqual([m["VersionId"] for m in listed["DeleteMarkers"]], [marker["VersionId"]])
        self.assertEqual([v["VersionId"] for v in listed["Versions"]], [v1])
        # Removing the marker at a spoke brings the object back everywhere.
        self.s3_b.delete_object(Bucket="data", Key="t/v", VersionId=marker["VersionId"])
        self.assertEqual(self.get(self.s3_hub, "t/v"), b"one")
        self.assertEqual(self.get(self.s3_b, "t/v"), b"one")
        # A spoke cannot see every version of a versioned bucket, so it refuses to delete one.
        self.s3_hub.delete_object(Bucket="data", Key="t/v")
        with self.assertRaises(ClientError) as ctx:
            self.s3_a.delete_bucket(Bucket="data")
        self.assertEqual(ctx.exception.response["Error"]["Code"], "NotImplemented")
        self.assertEqual(self.s3_hub.list_object_versions(Bucket="data", Prefix="t/v")
                         ["DeleteMarkers"][0]["IsLatest"], True)


class ResidencyTest(FabricTestCase):
    def rest(self, method, path, body=None):
        import json
        import urllib.request
        api = self.hub.url + "/_weft/api/v1/"
        req = urllib.request.Request(api + "tokens", method="POST", data=json.dumps(
            {"access_key_id": ROOT_ACCESS, "secret_access_key": ROOT_SECRET}).encode())
        with urllib.request.urlopen(req) as r:
            token = json.load(r)["token"]
        req = urllib.request.Request(api + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(req) as r:
            return json.load(r)

    def test_resident_bytes_never_cross_to_an_untagged_site(self):
        secret = os.urandom(256 * 1024)
        public = os.urandom(64 * 1024)
        # The admin makes the directory resident before data goes in.
        self.s3_hub.put_object(Bucket="data", Key="eu-medical/README", Body=b"EU only")
        self.assertEqual(self.rest("PUT", "namespace/residency?path=/data/eu-medical",
                                   {"tags": ["eu"]})["tags"], ["eu"])
        self.s3_hub.put_object(Bucket="data", Key="eu-medical/scan-0001.dcm", Body=secret)
        self.s3_hub.put_object(Bucket="data", Key="open/readme.bin", Body=public)
        self.assertEqual(self.rest("GET", "namespace/residency?path=/data/eu-medical")["tags"],
                         ["eu"])

        # The untagged spokes (A behind the WAN, B chained to A) are refused, and do not even
        # see the name in listings.
        for s3 in (self.s3_a, self.s3_b):
            with self.assertRaises(ClientError) as cm:
                self.get(s3, "eu-medical/scan-0001.dcm")
            self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
            with self.assertRaises(ClientError) as cm:
                s3.put_object(Bucket="data", Key="eu-medical/new.dcm", Body=b"x")
            self.assertEqual(cm.exception.response["Error"]["Code"], "AccessDenied")
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket="data").get("Contents", [])]
            self.assertEqual(keys, ["open/readme.bin"])
        self.assertEqual(self.get(self.s3_a, "open/readme.bin"), public)

        # A site tagged "eu" reads it.
        eu = self.start(Spoke(self.bin, self.hub.url, os.path.join(self.tmp, "eu"), "site-eu",
                              ["/data"], (ROOT_ACCESS, ROOT_SECRET), tags=("eu",)))
        self.assertEqual(self.get(self.client(eu.url, SPOKE_ACCESS, SPOKE_SECRET),
                                  "eu-medical/scan-0001.dcm"), secret)

        # What crossed the WAN towards spoke A: the public bytes did (the capture works),
        # no 4 KiB window of the resident file did, nor any name inside it; the directory's
        # own name only in the refusals of requests that named it, never in an invalidation.
        self.spoke_b.stop()
        self.spoke_a.stop()
        self.wan.stop()
        with open(os.path.join(self.tmp, "capture", "downstream.bin"), "rb") as f:
            crossed = f.read()
        self.assertIn(public[:4096], crossed)
        for off in range(0, len(secret), 4096):
            self.assertNotIn(secret[off:off + 4096], crossed, f"resident bytes at {off} crossed")
        self.assertNotIn(b"scan-0001", crossed)
        self.assertNotIn(b"README", crossed)
        self.assertNotIn(b'"/data/eu-medical"', crossed)


if __name__ == "__main__":
    unittest.main()
