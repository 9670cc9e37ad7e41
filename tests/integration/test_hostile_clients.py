"""Hostile clients against a real hub: hundreds of connections that send half a head, or a
head and a few body bytes and then go quiet (anonymous and signed), must not slow a normal
client down; refused uploads are answered at once and closed."""

import os
import socket
import statistics
import time

from s3lib import ROOT_ACCESS, ROOT_SECRET, S3TestCase, signed_put_head, time_gets

SLOW = 500  # connections held open while the normal client is timed


def p99(samples):
    return statistics.quantiles(samples, n=100)[98]


class SlowClientsTest(S3TestCase):
    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.hub.port))
        self.addCleanup(s.close)
        return s

    def test_slow_clients_do_not_slow_the_others(self):
        s3 = self.boto3()
        s3.create_bucket(Bucket="bkt")
        s3.put_object(Bucket="bkt", Key="small", Body=b"s" * 4096)
        url = s3.generate_presigned_url("get_object", Params={"Bucket": "bkt", "Key": "small"},
                                        ExpiresIn=600)
        time_gets(url, 100, 4096)  # warm up
        unloaded = time_gets(url, 400, 4096)

        # Refused uploads that go quiet are answered and closed at once (the old hub held a
        # worker for 120 s with each, and 32 of them stopped it).
        for _ in range(40):
            s = self.connect()
            s.sendall(b"PUT /bkt/x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n"
                      b"0123456789")
            s.settimeout(10)
            reply = s.recv(4096)
            self.assertTrue(reply.startswith(b"HTTP/1.1 403"), reply[:80])
            self.assertIn(b"Connection: close", reply)

        slow = []
        for i in range(SLOW):
            s = self.connect()
            kind = i % 4
            if kind == 0:  # anonymous upload, quiet after 10 bytes
                s.sendall(b"PUT /bkt/anon HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n"
                          b"0123456789")
            elif kind == 1:  # a signed upload, quiet after 10 bytes: it holds a request
                s.sendall(signed_put_head(self.hub.url, "bkt", f"slow-{i}", 1000000, ROOT_ACCESS,
                                          ROOT_SECRET) + b"0123456789")
            elif kind == 2:  # half a head
                s.sendall(b"GET /bkt/small HTTP/1.1\r\nHost: h\r\nX-Slow: ")
            slow.append(s)  # kind 3: connected, silent
        time.sleep(1)  # the server takes them all in
        loaded = time_gets(url, 400, 4096)
        ratio = p99(loaded) / p99(unloaded)
        print(f"\nnormal client p99: {p99(unloaded) * 1e3:.2f} ms unloaded, "
              f"{p99(loaded) * 1e3:.2f} ms with {SLOW} slow connections (x{ratio:.2f})")
        # The goal is 2x; a few ms of slack absorb a shared 2-core machine's scheduling noise
        # (bench/slow_clients.py reports the ratio itself). Broken, this takes seconds.
        self.assertLess(p99(loaded), 2 * p99(unloaded) + 0.005)
        # The signed uploads are still waiting for their bodies, not refused: the hub holds
        # them without holding up anyone else.
        for s in slow[1:40:4]:
            s.setblocking(False)
            with self.assertRaises(BlockingIOError):  # no answer yet, and not closed
                s.recv(1)
        # The hub still serves and the data is intact.
        self.assertEqual(s3.get_object(Bucket="bkt", Key="small")["Body"].read(), b"s" * 4096)


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


class MemoryTest(S3TestCase):
    """The hub's memory stays within its chunk cache (--memory-cache) and a bounded overhead,
    however much is read through it."""

    hub_args = ("--memory-cache", "16M")

    def test_reads_keep_no_more_than_the_memory_cache(self):
        import threading
        s3 = self.boto3(max_pool_connections=8)
        s3.create_bucket(Bucket="bkt")
        objects, size = 2000, 128 << 10  # 250 MB of distinct chunks: a 256 MB cache keeps them
        peak = [0.0]
        errors = []

        def work(first):
            client = self.boto3()
            try:
                for i in range(first, objects, 8):
                    client.put_object(Bucket="bkt", Key=f"o{i}", Body=os.urandom(size))
                for i in range(first, objects, 8):
                    body = client.get_object(Bucket="bkt", Key=f"o{i}")["Body"].read()
                    if len(body) != size:
                        errors.append(f"o{i}: {len(body)} bytes")
                    if i % 64 == first:
                        peak[0] = max(peak[0], resident_mib(self.hub.proc.pid))
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        # Measured: ~120-145 MB with a 16-32 MB cache, ~380 MB with the default 256 MB one.
        self.assertLess(peak[0], 220, f"peak resident {peak[0]:.0f} MB")
