"""The S3 API of `weft serve` driven by the command-line clients data engineers use: the AWS
CLI (`aws s3`, `aws s3api`), s3cmd and rclone, over HTTP and over HTTPS with a self-signed
certificate. Each tool's own config comes from a file this test writes; nothing outside the
test's temporary directory is read or written."""

import filecmp
import json
import os
import subprocess
import unittest

from s3lib import REGION, ROOT_ACCESS, ROOT_SECRET, S3TestCase
from weftlib import MIB, incompressible, tree_digests, write_tree


SMALL_TREE = {
    "train/000.jpg": incompressible("t0", 120_000),
    "train/001.jpg": incompressible("t1", 90_000),
    "train/sub/002.jpg": incompressible("t2", 33),
    "val/000.jpg": incompressible("v0", 64_000),
    "labels.json": b'{"0": "cat", "1": "dog"}\n',
    "empty": b"",
}


class ToolsTest(S3TestCase):
    """Runs each tool against the hub; HTTPS is the same suite on a TLS hub (below)."""

    ca_bundle = None

    def aws(self, *args, check=True):
        cmd = ["/usr/bin/aws", "--endpoint-url", self.hub.url]
        if self.ca_bundle:
            cmd += ["--ca-bundle", self.ca_bundle]
        return self.run_tool(cmd + list(args), check=check)

    def s3cmd(self, *args, check=True):
        host = self.hub.url.split("://", 1)[1]
        config = self.path("s3cmd.cfg")
        with open(config, "w") as f:
            f.write("[default]\n"
                    f"access_key = {ROOT_ACCESS}\nsecret_key = {ROOT_SECRET}\n"
                    f"host_base = {host}\nhost_bucket = {host}\n"
                    f"use_https = {'True' if self.ca_bundle else 'False'}\n"
                    f"ca_certs_file = {self.ca_bundle or ''}\n"
                    f"check_ssl_certificate = {'True' if self.ca_bundle else 'False'}\n"
                    f"bucket_location = {REGION}\nsignature_v2 = False\n"
                    "multipart_chunk_size_mb = 5\n")
        return self.run_tool(["/usr/bin/s3cmd", "-c", config, *args], check=check)

    def rclone(self, *args, check=True):
        config = self.path("rclone.conf")
        with open(config, "w") as f:
            f.write("[weft]\ntype = s3\nprovider = Other\nenv_auth = false\n"
                    f"access_key_id = {ROOT_ACCESS}\nsecret_access_key = {ROOT_SECRET}\n"
                    f"endpoint = {self.hub.url}\nregion = {REGION}\n"
                    "force_path_style = true\n")
        cmd = ["/usr/bin/rclone", "--config", config]
        if self.ca_bundle:
            cmd += ["--ca-cert", self.ca_bundle]
        return self.run_tool(cmd + list(args), check=check)

    def test_aws_s3_sync_both_ways_and_s3api(self):
        src = self.path("src")
        write_tree(src, SMALL_TREE)
        self.aws("s3", "mb", "s3://sync")
        self.aws("s3", "sync", src, "s3://sync/ds/")
        listed = self.aws("s3api", "list-objects-v2", "--bucket", "sync", "--prefix", "ds/")
        keys = sorted(o["Key"] for o in json.loads(listed.stdout)["Contents"])
        self.assertEqual(keys, sorted("ds/" + k for k in SMALL_TREE))
        back = self.path("back")
        self.aws("s3", "sync", "s3://sync/ds/", back)
        self.assertEqual(tree_digests(back), tree_digests(src))
        # A second sync after a change moves only the change.
        with open(os.path.join(src, "labels.json"), "ab") as f:
            f.write(b"more\n")
        out = self.aws("s3", "sync", src, "s3://sync/ds/").stdout.decode()
        self.assertEqual(out.count("upload:"), 1, out)
        head = json.loads(self.aws("s3api", "head-object", "--bucket", "sync", "--key",
                                   "ds/labels.json").stdout)
        self.assertEqual(head["ContentLength"], len(SMALL_TREE["labels.json"]) + 5)
        self.aws("s3", "rm", "--recursive", "s3://sync/ds/train/")
        listed = json.loads(self.aws("s3api", "list-objects-v2", "--bucket", "sync").stdout)
        self.assertFalse(any(o["Key"].startswith("ds/train/") for o in listed["Contents"]))

    def test_aws_s3_cp_200mb_multipart(self):
        big = self.path("big.bin")
        with open(big, "wb") as f:
            for i in range(25):
                f.write(incompressible(f"big{i}", 8 * MIB))
        self.aws("s3", "mb", "s3://large")
        self.aws("s3", "cp", big, "s3://large/big.bin")
        head = json.loads(self.aws("s3api", "head-object", "--bucket", "large", "--key",
                                   "big.bin").stdout)
        self.assertEqual(head["ContentLength"], 200 * MIB)
        self.assertRegex(head["ETag"], r'^"[0-9a-f]{32}-\d+"$')  # a multipart ETag
        out = self.path("big.out")
        self.aws("s3", "cp", "s3://large/big.bin", out)
        self.assertTrue(filecmp.cmp(big, out, shallow=False))

    def test_s3cmd(self):
        src = self.path("s3cmd-src")
        write_tree(src, SMALL_TREE)
        self.s3cmd("mb", "s3://tool")
        self.s3cmd("sync", src + "/", "s3://tool/d/")
        out = self.s3cmd("ls", "-r", "s3://tool/").stdout.decode()
        for rel in SMALL_TREE:
            self.assertIn("s3://tool/d/" + rel, out)
        big = self.write_file("s3cmd-big.bin", incompressible("s3cmd-big", 12 * MIB))
        self.s3cmd("put", big, "s3://tool/big.bin")  # multipart at 5 MiB
        got = self.path("s3cmd-big.out")
        self.s3cmd("get", "s3://tool/big.bin", got)
        self.assertTrue(filecmp.cmp(big, got, shallow=False))
        self.s3cmd("del", "s3://tool/big.bin")
        self.assertNotIn("big.bin", self.s3cmd("ls", "s3://tool/").stdout.decode())

    def test_rclone_sync_and_check(self):
        src = self.path("rclone-src")
        write_tree(src, SMALL_TREE)
        write_tree(src, {"deep/a/b/c/d.bin": incompressible("deep", 3 * MIB)})
        self.rclone("mkdir", "weft:rclone-b")
        self.rclone("sync", src, "weft:rclone-b/tree")
        self.rclone("check", src, "weft:rclone-b/tree")  # exits non-zero on any difference
        back = self.path("rclone-back")
        self.rclone("copy", "weft:rclone-b/tree", back)
        self.assertEqual(tree_digests(back), tree_digests(src))
        os.remove(os.path.join(src, "val/000.jpg"))
        self.rclone("sync", src, "weft:rclone-b/tree")
        self.rclone("check", src, "weft:rclone-b/tree")


class ToolsOverHttpsTest(ToolsTest):
    """The same suite against a hub serving HTTPS with a self-signed certificate."""

    def setUp(self):
        # The certificate must exist before the hub starts.
        import tempfile
        self.cert_dir = tempfile.mkdtemp(prefix="weft-tls-")
        self.ca_bundle = os.path.join(self.cert_dir, "cert.pem")
        key = os.path.join(self.cert_dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", self.ca_bundle], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.hub_args = ("--tls-cert", self.ca_bundle, "--tls-key", key)
        super().setUp()
        import shutil
        self.addCleanup(shutil.rmtree, self.cert_dir, ignore_errors=True)
        assert self.hub.url.startswith("https://"), self.hub.url

    def test_aws_s3_cp_200mb_multipart(self):
        self.skipTest("the 200 MB upload runs once, over HTTP")

    def test_boto3_verifies_the_certificate(self):
        s3 = self.boto3(verify=self.ca_bundle)
        s3.create_bucket(Bucket="tls")
        s3.put_object(Bucket="tls", Key="k", Body=b"over tls")
        self.assertEqual(s3.get_object(Bucket="tls", Key="k")["Body"].read(), b"over tls")
        untrusted = self.boto3(verify=True)
        with self.assertRaises(Exception) as ctx:
            untrusted.list_buckets()
        self.assertIn("certificate", str(ctx.exception).lower())


if __name__ == "__main__":
    unittest.main()
