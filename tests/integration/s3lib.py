"""Helpers for the S3 integration tests: start a real `weft serve` hub on a free loopback port
in a temporary data directory, and make clients (boto3, aws, s3cmd, rclone) point at it."""

import json
import os
import re
import signal
import subprocess
import threading
import urllib.error
import urllib.request

from weftlib import WeftTestCase

ROOT_ACCESS = "WEFTROOTACCESSKEY001"
ROOT_SECRET = "weft-root-secret-for-tests-0123456789abcd"
REGION = "us-east-1"
URL_LINE = re.compile(rb"serving S3 at (https?://[^ ]+)")


def rest(url, method, endpoint, body=None, token=None):
    """One call to Weft's REST API at `url`; returns (HTTP status, parsed JSON body)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + "/_weft/api/v1/" + endpoint, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def signed_put_head(url, bucket, key, length, access, secret):
    """The head of a PUT of `length` body bytes to url/bucket/key, SigV4-signed with an
    UNSIGNED-PAYLOAD body hash, as bytes (for clients that then misbehave on purpose)."""
    import urllib.parse
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    full = f"{url}/{bucket}/{key}"
    req = AWSRequest(method="PUT", url=full, headers={
        "Content-Length": str(length), "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
    SigV4Auth(Credentials(access, secret), "s3", REGION).add_auth(req)
    lines = [f"PUT /{bucket}/{key} HTTP/1.1", f"Host: {urllib.parse.urlsplit(full).netloc}"]
    lines += [f"{k}: {v}" for k, v in req.headers.items() if k.lower() != "host"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def time_gets(url, n, expect_bytes=None):
    """Latencies (s) of n GETs of a presigned `url` over one keep-alive connection."""
    import http.client
    import time
    import urllib.parse
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    target = parts.path + "?" + parts.query
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("GET", target)
        resp = conn.getresponse()
        body = resp.read()
        samples.append(time.perf_counter() - start)
        if resp.status != 200 or (expect_bytes is not None and len(body) != expect_bytes):
            raise AssertionError(f"GET answered {resp.status} with {len(body)} bytes")
    conn.close()
    return samples


class WeftProcess:
    """A long-running `weft` command; ready once a stdout line matches `ready` (its group 1
    is kept as self.url). Its stdout is collected by a thread."""

    ready_pattern = URL_LINE
    what = "weft"

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env)
        self.lines = []
        self.url = None
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(30) or self.url is None:
            self.proc.kill()
            err = self.proc.stderr.read().decode(errors="replace")
            raise RuntimeError(f"{self.what} did not start: {b''.join(self.lines)!r} {err}")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            m = self.ready_pattern.search(line)
            if m and self.url is None:
                self.url = m.group(1).decode()
                self.ready.set()
        self.ready.set()

    def stop(self, timeout=30):
        """SIGTERM, then wait: a clean stop exits 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    @property
    def port(self):
        return int(self.url.rsplit(":", 1)[1])


class Hub(WeftProcess):
    """A `weft serve` process."""

    what = "weft serve"

    def __init__(self, bin_path, data, extra_args=(), env=None):
        full_env = dict(os.environ)
        full_env.update({"WEFT_ROOT_ACCESS_KEY": ROOT_ACCESS, "WEFT_ROOT_SECRET_KEY": ROOT_SECRET})
        full_env.update(env or {})
        super().__init__([bin_path, "--data", data, "serve", "--listen", "127.0.0.1:0",
                          *extra_args], full_env)


class S3TestCase(WeftTestCase):
    """Each test gets a running hub (self.hub) over its own data directory."""

    hub_args = ()

    def setUp(self):
        super().setUp()
        self.start_hub()

    def start_hub(self, extra_args=None):
        self.hub = Hub(self.bin, self.data, extra_args if extra_args is not None else self.hub_args)
        self.addCleanup(self._stop_quietly, self.hub)
        return self.hub

    @staticmethod
    def _stop_quietly(hub):
        if hub.proc.poll() is None:
            hub.stop()

    def client_env(self, access=ROOT_ACCESS, secret=ROOT_SECRET):
        """Environment for aws/s3cmd/rclone subprocesses: no user config, these credentials."""
        env = dict(os.environ)
        # A machine-wide CA bundle setting would replace the tools' own trust settings.
        env.pop("AWS_CA_BUNDLE", None)
        env.update({
            "AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_DEFAULT_REGION": REGION, "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_PAGER": "",
            "HOME": self.tmp,
        })
        return env

    def boto3(self, access=ROOT_ACCESS, secret=ROOT_SECRET, verify=None, endpoint=None,
              signature_version="s3v4", **config):
        """A boto3 client of the hub (or of `endpoint`, a spoke's URL)."""
        import boto3
        from botocore.config import Config
        return boto3.client(
            "s3", endpoint_url=endpoint or self.hub.url, aws_access_key_id=access,
            aws_secret_access_key=secret, region_name=REGION, verify=verify,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                          signature_version=signature_version,
                          **config))

    def admin(self, *args, secret=ROOT_SECRET, check=True):
        """Runs `weft --server URL ARGS` with root's key in the environment."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("WEFT_ACCESS_KEY", "WEFT_SECRET_KEY", "WEFT_SERVER")}
        env.update({"WEFT_ROOT_ACCESS_KEY": ROOT_ACCESS, "WEFT_ROOT_SECRET_KEY": secret})
        cmd = [self.bin, "--server", self.hub.url, *args]
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=60)
        if check and proc.returncode != 0:
            self.fail(f"{' '.join(cmd)} exited {proc.returncode}: "
                      f"{proc.stderr.decode(errors='replace').strip()}")
        return proc

    def admin_json(self, *args):
        return json.loads(self.admin("--json", *args).stdout)

    def user_client(self, name, *rules):
        """A new user `name` with a key and the given (path, "read,write,...") rules, as a
        boto3 client."""
        self.admin("user", "create", name)
        key = self.admin_json("key", "create", name)
        for path, perms in rules:
            self.admin("rule", "add", "user:" + name, path, perms)
        return self.boto3(key["access_key_id"], key["secret_access_key"])

    def run_tool(self, cmd, env=None, check=True, timeout=600, input=None):
        proc = subprocess.run(cmd, env=env or self.client_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout, input=input)
        if check and proc.returncode != 0:
            self.fail(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                      f"{proc.stdout.decode(errors='replace')}\n"
                      f"{proc.stderr.decode(errors='replace')}")
        return proc
