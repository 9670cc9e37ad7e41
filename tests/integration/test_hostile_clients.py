"""Hostile clients against a real hub: hundreds of connections that send half a head, or a
head and a few body bytes and then go quiet (anonymous and signed), must not slow a normal
client down; refused uploads are answered at once and closed."""

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
            s.sendall(b"PUT /any/x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n"
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
