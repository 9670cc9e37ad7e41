"""`weft user|key|rule` against a running hub (--server, signing in with root's key from the
environment) and on the data directory itself, checked end to end: what the commands create is
what S3 requests signed with the new key may and may not do."""

import json
import os
import subprocess
import time
import unittest

from botocore.exceptions import ClientError

from s3lib import S3TestCase


def error_code(ctx):
    return ctx.exception.response["Error"]["Code"]


class AdminCommands(S3TestCase):

    def make_alice(self):
        """User alice with a key and read/write/list on /data/alice/; returns (key, rule)."""
        out = self.admin("user", "create", "alice", "--group", "eng").stdout.decode()
        self.assertIn("created user alice", out)
        key = self.admin_json("key", "create", "alice")
        self.assertEqual(key["user"], "alice")
        rule = self.admin_json("rule", "add", "user:alice", "/data/alice/", "read,write,list")
        self.assertEqual(rule["permissions"], "read,write,list")
        return key, rule

    def test_rules_decide_what_a_new_key_may_do(self):
        root = self.boto3()
        root.create_bucket(Bucket="data")
        root.put_object(Bucket="data", Key="other/x", Body=b"not alice's")
        key, rule = self.make_alice()

        users = {u["name"]: u for u in self.admin_json("user", "list")}
        self.assertEqual(users["alice"]["groups"], ["eng"])
        self.assertIn("root", users)
        self.assertEqual(self.admin_json("user", "show", "alice")["name"], "alice")
        keys = self.admin_json("key", "list", "alice")
        self.assertEqual([k["access_key_id"] for k in keys], [key["access_key_id"]])
        self.assertNotIn("secret_access_key", keys[0])
        self.assertIn(rule, self.admin_json("rule", "list"))
        self.assertIn(key["access_key_id"], self.admin("key", "list", "alice").stdout.decode())

        alice = self.boto3(key["access_key_id"], key["secret_access_key"])
        alice.put_object(Bucket="data", Key="alice/a.txt", Body=b"mine")
        self.assertEqual(alice.get_object(Bucket="data", Key="alice/a.txt")["Body"].read(),
                         b"mine")
        listed = alice.list_objects_v2(Bucket="data", Prefix="alice/")
        self.assertEqual([o["Key"] for o in listed["Contents"]], ["alice/a.txt"])

        outside = [
            lambda: alice.get_object(Bucket="data", Key="other/x"),
            lambda: alice.put_object(Bucket="data", Key="other/y", Body=b"no"),
            lambda: alice.list_objects_v2(Bucket="data", Prefix="other/"),
            lambda: alice.list_objects_v2(Bucket="data"),
            lambda: alice.delete_object(Bucket="data", Key="other/x"),
        ]
        for i, call in enumerate(outside):
            with self.subTest(call=i):
                with self.assertRaises(ClientError) as ctx:
                    call()
                self.assertEqual(error_code(ctx), "AccessDenied")
        self.assertEqual(root.get_object(Bucket="data", Key="other/x")["Body"].read(),
                         b"not alice's")

        self.admin("rule", "delete", rule["id"])
        self.assertNotIn(rule, self.admin_json("rule", "list"))
        with self.assertRaises(ClientError) as ctx:
            alice.get_object(Bucket="data", Key="alice/a.txt")
        self.assertEqual(error_code(ctx), "AccessDenied")

        self.admin("user", "delete", "alice")
        self.assertNotIn("alice", [u["name"] for u in self.admin_json("user", "list")])
        with self.assertRaises(ClientError) as ctx:
            alice.list_objects_v2(Bucket="data", Prefix="alice/")
        self.assertEqual(error_code(ctx), "InvalidAccessKeyId")

    def test_groups_and_key_delete(self):
        self.admin("user", "create", "bob")
        self.assertEqual(self.admin_json("user", "groups", "bob", "eng", "ops")["groups"],
                         ["eng", "ops"])
        key = self.admin_json("key", "create", "bob")
        self.admin("key", "delete", key["access_key_id"])
        self.assertEqual(self.admin_json("key", "list", "bob"), [])

    def test_errors_are_one_line(self):
        proc = self.admin("user", "list", secret="wrong-secret", check=False)
        self.assert_one_line_error(proc, "weft: user list: InvalidCredentials: ")
        proc = self.admin("user", "show", "nobody", check=False)
        self.assert_one_line_error(proc, "weft: user show: NotFound: ")
        proc = self.admin("rule", "add", "user:x", "/a/", "fly", check=False)
        self.assert_one_line_error(proc, "weft: rule add: InvalidArgument: ")
        # The hub holds the data directory: local mode points at --server.
        proc = self.weft("user", "list", check=False)
        self.assert_one_line_error(proc, "in use", "--server")

    def make_certificates(self):
        """A private CA and a certificate it signed for 127.0.0.1: (ca, cert, key) paths."""
        ca_config = self.write_file("ca.cnf", b"""
[req]
distinguished_name = dn
x509_extensions = v3_ca
prompt = no
[dn]
CN = weft test CA
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
""")
        ext = self.write_file("ext.cnf", b"subjectAltName = IP:127.0.0.1\n")
        ca, ca_key = self.path("ca.pem"), self.path("ca.key")
        cert, key, csr = self.path("cert.pem"), self.path("key.pem"), self.path("csr.pem")
        new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for cmd in (
            ["req", "-x509", "-config", ca_config, *new_key, "-keyout", ca_key, "-out", ca,
             "-days", "1"],
            ["req", *new_key, "-keyout", key, "-out", csr, "-subj", "/CN=weft test hub"],
            ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", cert, "-days", "1", "-extfile", ext],
        ):
            subprocess.run(["openssl", *cmd], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        return ca, cert, key

    def test_https_server_with_a_private_ca(self):
        ca, cert, key = self.make_certificates()
        self.assertEqual(self.hub.stop(), 0)
        self.start_hub(["--tls-cert", cert, "--tls-key", key])
        self.assertTrue(self.hub.url.startswith("https://127.0.0.1:"), self.hub.url)
        self.admin("--ca-file", ca, "user", "create", "carol")
        self.assertIn("carol", [u["name"] for u in self.admin_json("--ca-file", ca, "user",
                                                                    "list")])
        proc = self.admin("user", "list", check=False)  # the system store lacks the test CA
        self.assert_one_line_error(proc, "weft: user list: ", "not trusted")

    def test_local_mode_reads_what_the_hub_wrote(self):
        self.make_alice()
        self.assertEqual(self.hub.stop(), 0)
        users = [u["name"] for u in self.weft_json("user", "list")]
        self.assertEqual(users, ["alice", "root"])
        rules = self.weft_json("rule", "list")
        self.assertEqual([(r["subject"], r["prefix"]) for r in rules],
                         [("user:alice", "/data/alice/")])
        # A key made locally signs S3 requests once the hub is back.
        self.weft("rule", "add", "user:alice", "/", "list")
        key = self.weft_json("key", "create", "alice")
        self.start_hub()
        alice = self.boto3(key["access_key_id"], key["secret_access_key"])
        self.assertEqual(alice.list_buckets()["Buckets"], [])

    def test_a_new_root_key_in_the_environment_replaces_the_old_one(self):
        from s3lib import Hub, ROOT_ACCESS, ROOT_SECRET
        self.boto3().create_bucket(Bucket="kept")
        self.assertEqual(self.hub.stop(), 0)
        new_access, new_secret = "NEWROOTKEY0000000001", "a-new-root-secret-for-this-hub"
        hub = Hub(self.bin, self.data, env={"WEFT_ROOT_ACCESS_KEY": new_access,
                                            "WEFT_ROOT_SECRET_KEY": new_secret})
        self.addCleanup(self._stop_quietly, hub)
        self.hub = hub
        self.assertIn(b"replaced 1 earlier one", b"".join(hub.lines))
        with self.assertRaises(ClientError) as ctx:
            self.boto3(ROOT_ACCESS, ROOT_SECRET).list_buckets()
        self.assertEqual(error_code(ctx), "InvalidAccessKeyId")
        names = [b["Name"] for b in self.boto3(new_access, new_secret).list_buckets()["Buckets"]]
        self.assertEqual(names, ["kept"])

    def test_rotation_keeps_the_old_key_for_the_overlap_only(self):
        self.make_alice()
        old = self.admin_json("key", "list", "alice")[0]
        # A user rotates their own key: alice signs in with the key being replaced.
        env_key = self.admin_json("key", "create", "alice")
        env = {k: v for k, v in os.environ.items() if not k.startswith("WEFT_")}
        env.update({"WEFT_ACCESS_KEY": env_key["access_key_id"],
                    "WEFT_SECRET_KEY": env_key["secret_access_key"]})
        proc = subprocess.run([self.bin, "--json", "--server", self.hub.url, "key", "rotate",
                               "alice", "--overlap", "3s"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        new = json.loads(proc.stdout)
        listed = {k["access_key_id"]: k for k in self.admin_json("key", "list", "alice")}
        self.assertEqual(set(listed), {old["access_key_id"], env_key["access_key_id"],
                                       new["access_key_id"]})
        self.assertIn("expires", listed[old["access_key_id"]])
        self.assertNotIn("expires", listed[new["access_key_id"]])
        old_client = self.boto3(env_key["access_key_id"], env_key["secret_access_key"])
        self.boto3().create_bucket(Bucket="data")
        self.assertEqual(old_client.list_objects_v2(Bucket="data", Prefix="alice/")["KeyCount"], 0)
        time.sleep(3.5)
        with self.assertRaises(ClientError) as ctx:
            old_client.list_objects_v2(Bucket="data", Prefix="alice/")
        self.assertEqual(error_code(ctx), "InvalidAccessKeyId")
        fresh = self.boto3(new["access_key_id"], new["secret_access_key"])
        self.assertEqual(fresh.list_objects_v2(Bucket="data", Prefix="alice/")["KeyCount"], 0)
        self.assertEqual([k["access_key_id"] for k in self.admin_json("key", "list", "alice")],
                         [new["access_key_id"]])
        # Another user's keys are not alice's to rotate.
        self.admin("user", "create", "bob")
        proc = subprocess.run([self.bin, "--server", self.hub.url, "key", "rotate", "bob"],
                              env=dict(env, WEFT_ACCESS_KEY=new["access_key_id"],
                                       WEFT_SECRET_KEY=new["secret_access_key"]),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("AccessDenied", proc.stderr.decode())


if __name__ == "__main__":
    unittest.main()
