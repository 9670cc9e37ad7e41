#!/usr/bin/env python3
"""NeuralCache end to end: accelerator utilisation of a PyTorch DataLoader reading a remote
image dataset, as MLPerf Storage reports it (compute time / wall time, per epoch).

A hub holds a generated image-like dataset (log-normal sizes, mean 114.7 KB as ImageNet's
JPEGs); `weft dev wan` puts a WAN between it and everything else (default 20 ms each way,
500 Mbit/s). A DataLoader (2 workers kept between epochs as DLIO keeps them, boto3 in each)
reads shuffled epochs and "computes" each batch for the DLIO ResNet-50 time (0.103 s per 64 samples on an H100,
scaled to the batch size). Side by side, on the same bytes and link:
  - neuralcache+hints: a spoke (cache 60 % of the dataset, --cache-policy neural, all
    experts) and each epoch's order declared through POST cache/hints, the next epoch's
    appended, as weft.torch.HintingSampler does for a sampler moved by set_epoch;
  - neuralcache: the same spoke, no hints (experts infer what they can);
  - lru: the spoke with --cache-policy lru --prefetch none (a plain recency cache);
  - hub direct: no spoke; the loader reads the hub across the WAN.
Goals (the NeuralCache issue): utilisation >= 90 % from epoch 2 when bandwidth suffices, and a
first epoch limited by link rate rather than round trips (bytes / link rate is printed beside).

  /usr/bin/python3 bench/neuralcache_e2e.py [--files 1500] [--epochs 3] [--batch 16]
      [--delay-ms 20] [--rate-mbit 500] [--cache-fraction 0.6] [--modes ...]
"""

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time

import benchlib
from fabric_wan import ACCESS, SECRET, Proc, client, downstream_bytes
import s3lib  # tests/integration is on sys.path once fabric_wan is imported

COMPUTE_PER_SAMPLE_S = 0.103 / 64  # DLIO ResNet-50, H100


class KeyDataset:
    """Map-style dataset of S3 keys; each DataLoader worker opens its own boto3 client."""

    def __init__(self, url, keys):
        self.url, self.keys, self.s3 = url, keys, None

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        if self.s3 is None:
            self.s3 = client(self.url)
        return len(self.s3.get_object(Bucket="bench", Key=self.keys[i])["Body"].read())


def rest(url, method, endpoint, body=None, token=None):
    status, reply = s3lib.rest(url, method, endpoint, body, token)
    if status // 100 != 2:
        raise RuntimeError(f"{method} {endpoint}: HTTP {status} {reply}")
    return reply


def make_dataset(s3, files, seed, local=None):
    """`files` image-like objects in bucket "bench" (log-normal sizes, mean 114.7 KB), also
    written under `local` when given. Returns the sorted keys and the total bytes."""
    rng = random.Random(seed)
    cv = 136.0 / 114.7
    sigma = math.sqrt(math.log(1 + cv * cv))
    mu = math.log(114.7e3) - sigma * sigma / 2
    keys, total = [], 0
    for i in range(files):
        size = int(min(4e6, max(2e3, rng.lognormvariate(mu, sigma))))
        key = f"train/class_{i % 10:02d}/img_{i:05d}.jpg"
        body = rng.randbytes(size)
        s3.put_object(Bucket="bench", Key=key, Body=body)
        if local is not None:
            path = os.path.join(local, key)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(body)
        keys.append(key)
        total += size
    return sorted(keys), total


class EpochOrder:
    """The sampler: each epoch's shuffled order, set before the epoch starts."""

    def __init__(self):
        self.order = []

    def __iter__(self):
        return iter(self.order)

    def __len__(self):
        return len(self.order)


def run_epochs(url, keys, args, hint=None):
    import torch  # noqa: F401  (imported here so --help works without it)
    from torch.utils.data import DataLoader
    dataset = KeyDataset(url, keys)
    sampler = EpochOrder()
    # One loader for every epoch, its workers kept between epochs, as DLIO (the MLPerf Storage
    # benchmark) sets up PyTorch's; a loader per epoch would restart the workers and their
    # boto3 clients each epoch (~0.3 s of Python start-up counted as a stall).
    loader = DataLoader(dataset, batch_size=args.batch, sampler=sampler, num_workers=2,
                        prefetch_factor=2, collate_fn=lambda b: b, persistent_workers=True)
    def order_of(epoch):
        order = list(range(len(keys)))
        random.Random(1000 + epoch).shuffle(order)
        return order

    rows = []
    for epoch in range(args.epochs):
        order = order_of(epoch)
        if hint:
            hint(["/bench/" + keys[i] for i in order])
            # The order is a function of the epoch, as a DistributedSampler's: HintingSampler
            # then declares the next epoch's too, appended.
            hint(["/bench/" + keys[i] for i in order_of(epoch + 1)], append=True)
        sampler.order = order
        compute = 0.0
        start = time.monotonic()
        for batch in loader:
            step = COMPUTE_PER_SAMPLE_S * len(batch)
            time.sleep(step)
            compute += step
        wall = time.monotonic() - start
        rows.append({"epoch": epoch + 1, "wall_s": round(wall, 2),
                     "utilisation": round(compute / wall, 3)})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--weft", default=benchlib.default_weft())
    p.add_argument("--files", type=int, default=1500)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--delay-ms", type=float, default=20)
    p.add_argument("--rate-mbit", type=float, default=500)
    p.add_argument("--cache-fraction", type=float, default=0.6)
    p.add_argument("--modes", default="neuralcache+hints,neuralcache,lru,hub direct")
    p.add_argument("--out", default=os.path.join(benchlib.ROOT, "bench", "out",
                                                 "neuralcache_e2e.json"))
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="weft-nc-bench-")
    env = dict(os.environ, WEFT_ROOT_ACCESS_KEY=ACCESS, WEFT_ROOT_SECRET_KEY=SECRET,
               WEFT_HUB_ACCESS_KEY=ACCESS, WEFT_HUB_SECRET_KEY=SECRET)
    procs = []
    try:
        hub = Proc([args.weft, "--data", os.path.join(tmp, "hub"), "serve", "--listen",
                    "127.0.0.1:0"], r"serving S3 at (\S+)", env)
        procs.append(hub)
        s3 = client(hub.value)
        s3.create_bucket(Bucket="bench")
        keys, total = make_dataset(s3, args.files, 7)
        wan = Proc([args.weft, "dev", "wan", "--listen", "127.0.0.1:0", "--target",
                    hub.value.split("//")[1], "--delay-ms", str(args.delay_ms), "--rate-mbit",
                    str(args.rate_mbit)], r"WAN link (\S+) ->", env)
        procs.append(wan)
        link_bytes_per_s = args.rate_mbit * 1e6 / 8
        cache = int(total * args.cache_fraction)
        print(f"dataset: {len(keys)} files, {total / 1e6:.0f} MB; link {2 * args.delay_ms:g} ms "
              f"round trip, {args.rate_mbit:g} Mbit/s (the whole dataset takes "
              f"{total / link_bytes_per_s:.1f} s at link rate); compute "
              f"{COMPUTE_PER_SAMPLE_S * len(keys):.1f} s per epoch; spoke cache "
              f"{cache / 1e6:.0f} MB", flush=True)
        results = []
        for mode in args.modes.split(","):
            before = downstream_bytes(wan)
            spoke = None
            if mode == "hub direct":
                url, hint = "http://" + wan.value, None
            else:
                extra = (["--cache-policy", "lru", "--prefetch", "none"] if mode == "lru" else [])
                spoke = Proc([args.weft, "spoke", "--hub", "http://" + wan.value, "--cache",
                              os.path.join(tmp, "spoke-" + mode.replace(" ", "-")),
                              "--cache-size", str(cache), "--site", "gpu", "--portal", "/bench",
                              "--listen", "127.0.0.1:0", "--connections", "16", "--wan-mbit",
                              str(args.rate_mbit), "--wan-rtt-ms", str(2 * args.delay_ms),
                              *extra], r"serving S3 at (\S+)", env)
                procs.append(spoke)
                url, hint = spoke.value, None
                if mode == "neuralcache+hints":
                    token = rest(url, "POST", "tokens",
                                 {"access_key_id": ACCESS, "secret_access_key": SECRET})["token"]
                    hint = lambda paths, append=False, u=url, t=token: rest(  # noqa: E731
                        u, "POST", "cache/hints",
                        {"dataset": "/bench/train", "paths": paths, "append": append}, token=t)
            epochs = run_epochs(url, keys, args, hint)
            wan_bytes = downstream_bytes(wan) - before
            if spoke:
                stats = rest(url, "GET", "cache",
                             token=rest(url, "POST", "tokens",
                                        {"access_key_id": ACCESS,
                                         "secret_access_key": SECRET})["token"])
                hit_ratio = stats["hit_ratio"]
                spoke.stop()
            else:
                hit_ratio = None
            row = {"mode": mode, "wan_mb": round(wan_bytes / 1e6, 1), "hit_ratio": hit_ratio,
                   **{f"util_e{e['epoch']}": e["utilisation"] for e in epochs},
                   **{f"wall_e{e['epoch']}": e["wall_s"] for e in epochs}}
            results.append(row)
            benchlib.emit({"bench": "neuralcache_e2e", **row})
        columns = ["mode", *[f"util_e{e + 1}" for e in range(args.epochs)],
                   *[f"wall_e{e + 1}" for e in range(args.epochs)], "hit_ratio", "wan_mb"]
        benchlib.table(results, columns)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "dataset_bytes": total, "results": results}, f,
                      indent=1)
    finally:
        for proc in reversed(procs):
            proc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
