"""The audit log end to end: a hub records every request from every protocol (S3 by boto3,
REST, a spoke's fabric calls), allowed or refused; `weft audit verify` passes on what it wrote
and fails, naming the line, on an edited, deleted or swapped line; an acknowledged PUT's record
survives kill -9; and the REST search filters. Written from docs/formats/audit.md."""

import json
import os
import signal
import subprocess
import unittest

from botocore.exceptions import ClientError

from s3lib import ROOT_ACCESS, ROOT_SECRET, Hub, S3TestCase, rest
from test_fabric import SPOKE_ACCESS, SPOKE_SECRET, Spoke


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class AuditLogTest(S3TestCase):

    def log_path(self):
        return os.path.join(self.data, "audit.log")

    def verify(self, *args):
        return subprocess.run([self.bin, "--data", self.data, "audit", "verify", *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=60)

    def token(self, access=ROOT_ACCESS, secret=ROOT_SECRET):
        status, body = rest(self.hub.url, "POST", "tokens",
                            {"access_key_id": access, "secret_access_key": secret})
        self.assertEqual(status, 200, body)
        return body["token"]

    def test_every_protocol_allowed_or_refused_is_recorded_and_verifies(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="data")
        s3.put_object(Bucket="data", Key="a.txt", Body=b"hello")
        alice = self.user_client("alice", ("/data/alice/", "read,write,list"))
        with self.assertRaises(ClientError):
            alice.get_object(Bucket="data", Key="a.txt")
        bad = self.boto3("NOSUCHKEY00000000000", "x" * 40)
        with self.assertRaises(ClientError):
            bad.list_buckets()
        presigned = s3.generate_presigned_url("get_object",
                                              Params={"Bucket": "data", "Key": "a.txt"})
        import urllib.request
        with urllib.request.urlopen(presigned, timeout=30) as r:
            self.assertEqual(r.read(), b"hello")
        root = self.token()
        self.assertEqual(rest(self.hub.url, "GET", "usage", token=root)[0], 200)
        self.assertEqual(rest(self.hub.url, "GET", "users", token="forged")[0], 401)
        # A spoke's calls are recorded at the hub with its site.
        spoke = Spoke(self.bin, self.hub.url, os.path.join(self.tmp, "spoke"), "gpu-1",
                      ["/data"], (ROOT_ACCESS, ROOT_SECRET))
        self.addCleanup(spoke.stop)
        sp = self.boto3(endpoint=spoke.url, access=SPOKE_ACCESS, secret=SPOKE_SECRET)
        self.assertEqual(sp.get_object(Bucket="data", Key="a.txt")["Body"].read(), b"hello")
        spoke.stop()
        self.assertEqual(self.hub.stop(), 0)

        recs = records(self.log_path())
        ops = [(r["protocol"], r["operation"], r["principal"], r["status"]) for r in recs]
        self.assertIn(("s3", "CreateBucket", "root", 200), ops)
        self.assertIn(("s3", "PutObject", "root", 200), ops)
        self.assertIn(("s3", "GetObject", "alice", 403), ops)
        self.assertIn(("s3", "GET", "", 403), ops)  # the unknown key: never authenticated
        self.assertIn(("rest", "GET", "root", 200), ops)
        self.assertIn(("rest", "GET", "", 401), ops)
        fabric = [r for r in recs if r["protocol"] == "fabric"]
        self.assertTrue(any(r["operation"] == "attach" for r in fabric), fabric)
        self.assertTrue(any(r["operation"] == "lookup" and r["site"] == "gpu-1" and
                            r["principal"] == "root" for r in fabric), fabric)
        put = next(r for r in recs if r["operation"] == "PutObject")
        self.assertEqual(put["bytes_in"], 5)
        self.assertEqual(put["path"], "/data/a.txt")
        # A presigned URL's signature never reaches the log.
        text = open(self.log_path()).read()
        self.assertNotIn("X-Amz-Signature", text)
        self.assertNotIn(presigned.split("X-Amz-Signature=")[1], text)
        self.assertEqual([r["seq"] for r in recs], list(range(1, len(recs) + 1)))
        ok = self.verify()
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        self.assertIn(f"{len(recs)} records", ok.stdout)

    def test_an_edited_deleted_or_swapped_line_fails_verify(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="bkt")
        for i in range(6):
            s3.put_object(Bucket="bkt", Key=f"k{i}", Body=b"x")
        self.assertEqual(self.hub.stop(), 0)
        with open(self.log_path()) as f:
            good = f.read().splitlines(keepends=True)
        self.assertEqual(self.verify().returncode, 0)

        def tampered(lines, needle):
            with open(self.log_path(), "w") as f:
                f.writelines(lines)
            proc = self.verify()
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertIn(needle, proc.stdout)

        edited = list(good)
        edited[3] = edited[3].replace('"principal":"root"', '"principal":"alice"')
        tampered(edited, "line 4: its hash does not match")
        tampered(good[:2] + good[3:], "line 3:")
        tampered(good[:2] + [good[4], good[3], good[2]] + good[5:], "line 3:")
        tampered(good[:-1], "its tail was cut")
        with open(self.log_path(), "w") as f:
            f.writelines(good)
        self.assertEqual(self.verify().returncode, 0)
        # A hub will not extend a log whose end was tampered with.
        with open(self.log_path(), "w") as f:
            f.writelines(edited[:-1] + [good[-1].replace('"status":200', '"status":204')])
        with self.assertRaises(RuntimeError):
            Hub(self.bin, self.data)

    def test_an_acknowledged_write_is_recorded_even_after_kill_9(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="bkt")
        s3.put_object(Bucket="bkt", Key="acked", Body=b"x" * 100)
        os.kill(self.hub.proc.pid, signal.SIGKILL)
        self.hub.proc.wait()
        puts = [r for r in records(self.log_path()) if r["operation"] == "PutObject"]
        self.assertEqual([r["path"] for r in puts], ["/bkt/acked"])
        self.assertEqual(self.verify().returncode, 0)
        # The next start continues the chain.
        self.start_hub()
        self.boto3().put_object(Bucket="bkt", Key="after", Body=b"y")
        self.assertEqual(self.hub.stop(), 0)
        self.assertEqual(self.verify().returncode, 0)

    def test_search_filters_and_needs_admin(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="bkt")
        alice = self.user_client("alice", ("/bkt/alice/", "read,write,list"))
        alice.put_object(Bucket="bkt", Key="alice/1", Body=b"1")
        with self.assertRaises(ClientError):
            alice.put_object(Bucket="bkt", Key="bob/1", Body=b"1")
        root = self.token()
        status, body = rest(self.hub.url, "GET", "audit?principal=alice&denied=true", token=root)
        self.assertEqual(status, 200, body)
        self.assertEqual([(r["operation"], r["path"]) for r in body["records"]],
                         [("PutObject", "/bkt/bob/1")])
        status, body = rest(self.hub.url, "GET", "audit?protocol=s3&limit=2", token=root)
        self.assertEqual(len(body["records"]), 2)
        after = body["next_after"]
        status, more = rest(self.hub.url, "GET", f"audit?protocol=s3&after={after}", token=root)
        self.assertTrue(all(r["seq"] > after for r in more["records"]))
        self.assertEqual(rest(self.hub.url, "GET", "audit?denied=maybe", token=root)[0], 400)
        # Alice may not read the log.
        key = self.admin_json("key", "create", "alice")
        token = self.token(key["access_key_id"], key["secret_access_key"])
        self.assertEqual(rest(self.hub.url, "GET", "audit", token=token)[0], 403)

    def test_off_means_no_log(self):
        self.assertEqual(self.hub.stop(), 0)
        os.remove(self.log_path())
        self.start_hub(["--audit-log", "off"])
        self.boto3().create_bucket(Bucket="bkt")
        self.assertFalse(os.path.exists(self.log_path()))
        status, _ = rest(self.hub.url, "GET", "audit", token=self.token())
        self.assertEqual(status, 404)


if __name__ == "__main__":
    unittest.main()
