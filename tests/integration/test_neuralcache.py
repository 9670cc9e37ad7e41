"""NeuralCache end to end: `weft serve`, a WAN emulator (10 ms each way) and a `weft spoke`
with a cache smaller than the dataset. A real PyTorch DataLoader (2 workers, boto3 in each)
reads shuffled epochs through the spoke while each epoch's order is declared to the spoke's
hint API, as weft.torch.HintingSampler will."""

import hashlib
import json
import os
import random
import subprocess
import time
import unittest
import urllib.request

import s3lib
from s3lib import ROOT_ACCESS, ROOT_SECRET, REGION, S3TestCase, rest
from test_fabric import SPOKE_ACCESS, SPOKE_SECRET, Spoke, Wan
from weftlib import WeftTestCase

FILES = 96


class KeyDataset:
    """A map-style dataset of S3 keys read through boto3 (one client per DataLoader worker)."""

    def __init__(self, url, keys):
        self.url, self.keys, self.s3 = url, keys, None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        if self.s3 is None:
            import boto3
            from botocore.config import Config
            self.s3 = boto3.client(
                "s3", endpoint_url=self.url, aws_access_key_id=SPOKE_ACCESS,
                aws_secret_access_key=SPOKE_SECRET, region_name=REGION,
                config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
        body = self.s3.get_object(Bucket="data", Key=self.keys[i])["Body"].read()
        return self.keys[i], hashlib.sha256(body).hexdigest()


class NeuralCacheTest(S3TestCase):
    hub_args = ("--lease-ms", "60000")

    def setUp(self):
        super().setUp()
        s3 = self.boto3()
        s3.create_bucket(Bucket="data")
        rng = random.Random(5)
        self.digests = {}
        for i in range(FILES):
            key = f"train/c{i % 4}/img_{i:04d}.jpg"
            body = rng.randbytes(rng.randint(8_000, 60_000))
            s3.put_object(Bucket="data", Key=key, Body=body)
            self.digests[key] = hashlib.sha256(body).hexdigest()
        self.keys = sorted(self.digests)
        self.wan = Wan(self.bin, f"127.0.0.1:{self.hub.port}", 10)
        self.addCleanup(self._stop_quietly, self.wan)
        # About half the dataset fits.
        self.spoke = Spoke(self.bin, self.wan.url, os.path.join(self.tmp, "spoke"), "gpu",
                           ["/data"], (ROOT_ACCESS, ROOT_SECRET),
                           extra=["--cache-size", "2M", "--wan-mbit", "200",
                                  "--wan-rtt-ms", "20"])
        self.addCleanup(self._stop_quietly, self.spoke)
        status, reply = rest(self.spoke.url, "POST", "tokens",
                             {"access_key_id": SPOKE_ACCESS, "secret_access_key": SPOKE_SECRET})
        self.assertEqual(status, 200, reply)
        self.token = reply["token"]

    def stats(self):
        status, reply = rest(self.spoke.url, "GET", "cache", token=self.token)
        self.assertEqual(status, 200, reply)
        return reply

    def test_a_dataloader_reads_exact_bytes_and_declared_orders_are_prefetched(self):
        import torch
        from torch.utils.data import DataLoader

        dataset = KeyDataset(self.spoke.url, self.keys)
        per_epoch = []
        for epoch in range(2):
            order = list(range(FILES))
            random.Random(100 + epoch).shuffle(order)
            # What HintingSampler sends: this epoch's paths, in order.
            status, reply = rest(self.spoke.url, "POST", "cache/hints",
                                 {"dataset": "/data/train",
                                  "paths": ["/data/" + self.keys[i] for i in order]},
                                 token=self.token)
            self.assertEqual(status, 200, reply)
            self.assertEqual(reply["accepted_items"], FILES)
            self.assertEqual(reply["unknown_paths"], 0)
            before = self.stats()
            loader = DataLoader(dataset, batch_size=8, sampler=order, num_workers=2,
                                collate_fn=lambda batch: batch)
            seen = []
            for batch in loader:
                time.sleep(0.02)  # emulated compute
                for key, digest in batch:
                    self.assertEqual(digest, self.digests[key], key)
                    seen.append(key)
            self.assertEqual(seen, [self.keys[i] for i in order])
            after = self.stats()
            per_epoch.append((after["reads"] - before["reads"], after["hits"] - before["hits"]))

        # Every read was seen; the declared order let the spoke fetch ahead of the readers.
        self.assertEqual([reads for reads, _ in per_epoch], [FILES, FILES])
        final = self.stats()
        self.assertGreater(final["prefetch"]["useful"], FILES // 2, final)
        hints = next(e for e in final["prefetch"]["experts"] if e["name"] == "hints")
        self.assertGreater(hints["useful"], 0, final)
        self.assertGreater(sum(hits for _, hits in per_epoch), FILES, per_epoch)
        self.assertLessEqual(final["used_bytes"], 2 * 1024 * 1024)

        # The CLI and the Prometheus text show the same state.
        env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=SPOKE_ACCESS, WEFT_ROOT_SECRET_KEY=SPOKE_SECRET)
        out = self.run_tool([self.bin, "--server", self.spoke.url, "cache", "stats"], env=env)
        self.assertIn("hints", out.stdout.decode())
        self.assertIn("policy", out.stdout.decode())
        with urllib.request.urlopen(self.spoke.url + "/_weft/metrics") as r:
            metrics = r.read().decode()
        self.assertIn("weft_cache_hits_total", metrics)
        self.assertIn('weft_cache_expert_weight{expert="hints"}', metrics)

    def test_bad_hints_get_clear_errors_and_change_nothing(self):
        before = self.stats()
        cases = [
            ({"paths": ["/data/train/c0/img_0000.jpg"]}, 400, "dataset"),
            ({"dataset": "/data/train", "paths": ["/data/elsewhere/x"]}, 400, "not under"),
            ({"dataset": "/data/train", "paths": ["../../etc/passwd"]}, 400, ""),
            ({"dataset": "/data/train", "bogus": 1}, 400, "unknown field"),
            ({"dataset": "/data/train", "rank": 3, "world_size": 2}, 400, "rank"),
            ({"dataset": "/data/train", "sampler": "magic"}, 400, "sampler"),
            ({"dataset": "/data/train", "seed": "seven"}, 400, "seed"),
        ]
        for body, want, words in cases:
            status, reply = rest(self.spoke.url, "POST", "cache/hints", body, token=self.token)
            self.assertEqual(status, want, (body, reply))
            self.assertIn(words, json.dumps(reply), (body, reply))
        status, _ = rest(self.spoke.url, "POST", "cache/hints",
                         {"dataset": "/data/train", "paths": []})
        self.assertIn(status, (401, 403))
        after = self.stats()
        self.assertEqual(after["prefetch"]["bytes_prefetched"],
                         before["prefetch"]["bytes_prefetched"])
        # Seed mode: the spoke lists the dataset and computes the rank's share itself.
        status, reply = rest(self.spoke.url, "POST", "cache/hints",
                             {"dataset": "/data/train", "seed": 3, "epoch": 0, "rank": 1,
                              "world_size": 4}, token=self.token)
        self.assertEqual(status, 200, reply)
        self.assertEqual(reply["accepted_items"], FILES // 4)


class CommandsTest(WeftTestCase):
    """`weft demo` and the simulator's commands, as a newcomer runs them."""

    def test_demo_runs_epochs_through_a_spoke_and_cleans_up(self):
        tmpdir = self.path("tmpdir")
        os.makedirs(tmpdir)
        env = dict(os.environ, TMPDIR=tmpdir)
        proc = subprocess.run([self.bin, "demo", "--files", "120", "--epochs", "2", "--batch",
                               "16", "--compute-ms", "5", "--delay-ms", "5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              timeout=300)
        out = proc.stdout.decode()
        self.assertEqual(proc.returncode, 0, out + proc.stderr.decode())
        rows = [line.split() for line in out.splitlines()
                if line[:1].isdigit() and "%" in line]
        self.assertEqual([r[0] for r in rows], ["1", "2"], out)
        # epoch, time, "s", util, "%", hits, "%", ...: the second epoch is served from the spoke.
        self.assertGreater(int(rows[1][5]), 50, out)
        self.assertIn("hints", out)
        self.assertEqual(os.listdir(tmpdir), [])  # nothing left behind

    def test_demo_runs_a_job_of_several_ranks(self):
        proc = subprocess.run([self.bin, "demo", "--files", "120", "--epochs", "2", "--batch",
                               "8", "--compute-ms", "5", "--delay-ms", "5", "--ranks", "3",
                               "--workers", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        out = proc.stdout.decode()
        self.assertEqual(proc.returncode, 0, out + proc.stderr.decode())
        self.assertIn("3 ranks stepping together, 2 loader workers each", out)
        rows = [line.split() for line in out.splitlines()
                if line[:1].isdigit() and "%" in line]
        self.assertEqual([r[0] for r in rows], ["1", "2"], out)
        self.assertGreater(int(rows[1][5]), 50, out)  # each rank's share hinted and served
        self.assertRegex(out, r"\d+\.\d\d/\d+\.\d ms")  # read latency per epoch
        bad = subprocess.run([self.bin, "demo", "--ranks", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        self.assertEqual(bad.returncode, 2)

    def test_cache_sim_compares_policies_with_belady_on_a_generated_trace(self):
        trace = self.path("w1.trace")
        subprocess.run([self.bin, "cache-trace", "--workload", "w1", "--files", "500",
                        "--unit-size", "--out", trace], check=True, stdout=subprocess.PIPE)
        proc = subprocess.run([self.bin, "cache-sim", trace, "--cache-size", "50%", "--policy",
                               "lru,epoch", "--json"], check=True, stdout=subprocess.PIPE)
        hits = {r["config"]: r["all"]["hit_ratio"] for r in json.loads(proc.stdout)["results"]}
        self.assertEqual(set(hits), {"lru", "epoch", "belady"})
        self.assertAlmostEqual(hits["epoch"], hits["belady"], places=3)  # c(E-1)/E = .45
        self.assertAlmostEqual(hits["epoch"], 0.45, places=2)
        self.assertLess(hits["lru"], 0.2)
        bad = subprocess.run([self.bin, "cache-sim", trace, "--policy", "bogus"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown policy 'bogus'", bad.stderr.decode())


if __name__ == "__main__":
    unittest.main()
