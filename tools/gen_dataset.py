#!/usr/bin/env python3
"""Generates training-data-like datasets with a fixed seed, and mutated next versions of them.

Kinds (see docs and BENCHMARKING.md):
  images   JPEG-like files, log-normal sizes with a mean of about 115 KB, incompressible
  shards   WebDataset-style tar shards: per sample a .jpg (image-like), .json and .cls member
  jsonl    text records, one JSON object per line (compressible)
  tensors  checkpoint-like safetensors files of float32 values
  mixed    a quarter of each

Examples:
  gen_dataset.py --kind images --size 100M --seed 1 --out /tmp/v1
  gen_dataset.py --mutate /tmp/v1 --change-fraction 0.1 --seed 2 --out /tmp/v2

The same arguments always give the same bytes. Standard library only.
"""

import argparse
import hashlib
import io
import json
import math
import os
import random
import shutil
import struct
import sys
import tarfile

KINDS = ("images", "shards", "jsonl", "tensors")
MIB = 1 << 20


def parse_size(text):
    """'100M', '1G', '512K', '12345' -> bytes (powers of 1024)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = 1
    for suffix, mult in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if text.endswith(suffix):
            text, scale = text[:-1], mult
            break
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (use e.g. 50M, 1G)")
    if value < 0:
        raise argparse.ArgumentTypeError("size must be positive")
    return int(value * scale)


class Bytes:
    """Deterministic incompressible bytes: SHAKE-128 of (seed, label), about 200 MB/s, and
    unlike random.randbytes (~70 MB/s) fast enough for gigabyte datasets."""

    def __init__(self, seed):
        self.seed = seed

    def get(self, label, n):
        out = bytearray()
        piece = 0
        while len(out) < n:
            want = min(16 * MIB, n - len(out))
            out += hashlib.shake_128(f"{self.seed}/{label}/{piece}".encode()).digest(want)
            piece += 1
        return bytes(out)


def image_size(rng):
    # Log-normal with sigma 0.6: mean = exp(mu + sigma^2 / 2) = 115 KB.
    sigma = 0.6
    mu = math.log(115_000) - sigma * sigma / 2
    return int(min(max(rng.lognormvariate(mu, sigma), 4_000), 4 * MIB))


def image_bytes(gen, label, size):
    """A JPEG look-alike: SOI + JFIF APP0 header, entropy-coded-like noise, EOI."""
    header = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    body = gen.get(label, max(size - len(header) - 2, 0))
    return header + body + b"\xff\xd9"


WORDS = None
PHRASES = None


def vocabulary():
    """The words of every generated text. Built once, from a generator of its own: drawing them
    from a caller's would make what that caller draws next depend on whether another kind was
    generated first in the same process."""
    global WORDS
    if WORDS is None:
        rng = random.Random("gen_dataset/vocabulary")
        letters = "etaoinshrdlcumwfgypbvkjxqz"
        weights = [12, 9, 8, 8, 7, 7, 6, 6, 6, 4, 4, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1]
        WORDS = ["".join(rng.choices(letters, weights, k=rng.randint(2, 10))) for _ in range(5000)]
    return WORDS


def phrases():
    """Short word sequences with Zipf-like word frequencies, like natural text. Records are
    built from phrases rather than single words only because it is ten times faster."""
    global PHRASES
    if PHRASES is None:
        rng = random.Random("gen_dataset/phrases")
        words = vocabulary()
        cum, acc = [], 0.0
        for rank in range(len(words)):
            acc += 1.0 / (rank + 10)  # Zipf-Mandelbrot
            cum.append(acc)
        PHRASES = [" ".join(rng.choices(words, cum_weights=cum, k=rng.randint(3, 12)))
                   for _ in range(20000)]
    return PHRASES


def text_line(rng, idx):
    text = " ".join(rng.choices(phrases(), k=rng.randint(3, 60)))
    rec = {"id": idx, "text": text, "lang": rng.choice(["en", "de", "fr", "es"]),
           "score": round(rng.random(), 4), "source": f"crawl-{rng.randint(0, 99):02d}"}
    return (json.dumps(rec) + "\n").encode()


def jsonl_bytes(rng, start_idx, size):
    out = bytearray()
    idx = start_idx
    while len(out) < size:
        out += text_line(rng, idx)
        idx += 1
    return bytes(out), idx


def tensor_bytes(gen, label, n_floats):
    """float32 values of plausible magnitude (|x| in ~[2^-7, 2^-3]): random mantissas, narrow
    exponents, like trained weights; nearly incompressible, as real checkpoints are."""
    raw = bytearray(gen.get(label, n_floats * 4))
    top = bytes((b & 0x80) | 0x3C | (b & 0x01) for b in range(256))
    raw[3::4] = raw[3::4].translate(top)
    return bytes(raw)


def safetensors_file(gen, rng, label, size):
    tensors = []
    remaining = max(size // 4, 16)
    i = 0
    while remaining > 0:
        n = min(remaining, rng.choice([4096, 65536, 262144, 1 << 20, 4 << 20]))
        tensors.append((f"layers.{i}.weight", n))
        remaining -= n
        i += 1
    header, offset = {}, 0
    for name, n in tensors:
        header[name] = {"dtype": "F32", "shape": [n], "data_offsets": [offset, offset + 4 * n]}
        offset += 4 * n
    hdr = json.dumps(header).encode()
    hdr += b" " * (-len(hdr) % 8)
    parts = [struct.pack("<Q", len(hdr)), hdr]
    for idx, (name, n) in enumerate(tensors):
        parts.append(tensor_bytes(gen, f"{label}/{idx}", n))
    return b"".join(parts)


def tar_member(tf, name, data, mtime=1_700_000_000):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o644
    tf.addfile(info, io.BytesIO(data))


def shard_samples(gen, rng, label, first_key, target):
    """Samples (key, jpg, json, cls) adding up to about `target` bytes."""
    samples, total, key = [], 0, first_key
    while total < target:
        size = image_size(rng)
        jpg = image_bytes(gen, f"{label}/{key}", size)
        meta = json.dumps({"key": f"{key:09d}", "width": rng.choice([256, 384, 512]),
                           "caption": " ".join(rng.choices(vocabulary(), k=12))}).encode()
        cls = str(rng.randint(0, 999)).encode()
        samples.append((key, jpg, meta, cls))
        total += len(jpg) + len(meta) + len(cls) + 3 * 512
        key += 1
    return samples, key


def write_shard(path, samples):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for key, jpg, meta, cls in samples:
            tar_member(tf, f"{key:09d}.jpg", jpg)
            tar_member(tf, f"{key:09d}.json", meta)
            tar_member(tf, f"{key:09d}.cls", cls)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def generate_kind(kind, out, size, seed):
    rng = random.Random(f"{seed}/{kind}")
    gen = Bytes(f"{seed}/{kind}")
    total, i = 0, 0
    if kind == "images":
        while total < size:
            path = os.path.join(out, "images", f"class_{i // 1000:04d}", f"img_{i:07d}.jpg")
            total += write(path, image_bytes(gen, i, image_size(rng)))
            i += 1
    elif kind == "shards":
        shard_size = min(max(size // 16, MIB), 64 * MIB)
        key = 0
        while total < size:
            samples, key = shard_samples(gen, rng, f"shard{i}", key, min(shard_size, size - total))
            path = os.path.join(out, "shards", f"shard-{i:06d}.tar")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_shard(path, samples)
            total += os.path.getsize(path)
            i += 1
    elif kind == "jsonl":
        file_size = min(max(size // 8, MIB), 32 * MIB)
        idx = 0
        while total < size:
            data, idx = jsonl_bytes(rng, idx, min(file_size, size - total))
            total += write(os.path.join(out, "jsonl", f"part-{i:05d}.jsonl"), data)
            i += 1
    elif kind == "tensors":
        file_size = min(max(size // 8, MIB), 256 * MIB)
        while total < size:
            data = safetensors_file(gen, rng, f"t{i}", min(file_size, size - total))
            total += write(os.path.join(out, "tensors", f"model-{i:05d}.safetensors"), data)
            i += 1
    return total, i


# ---- mutation ----

def mutate_file(src, dst, action, gen, rng, label):
    """Writes a changed copy of src to dst. Kind-aware so files stay valid (tar stays tar,
    JSONL stays lines)."""
    with open(src, "rb") as f:
        data = f.read()
    if src.endswith(".tar"):
        with tarfile.open(src, "r") as tf:
            members = [m for m in tf.getmembers() if m.isfile() and m.size > 0]
        if action == "rewrite" and members:
            m = rng.choice(members)
            buf = bytearray(data)
            buf[m.offset_data:m.offset_data + m.size] = gen.get(label, m.size)
            data = bytes(buf)
        else:  # append a few samples, as a shard writer that kept going would
            with tarfile.open(src, "r") as tf:
                names = tf.getnames()
            last = max(int(n.split(".")[0]) for n in names) if names else 0
            shutil.copyfile(src, dst)
            samples, _ = shard_samples(gen, rng, label, last + 1, 512 * 1024)
            with tarfile.open(dst, "a", format=tarfile.USTAR_FORMAT) as tf:
                for key, jpg, meta, cls in samples:
                    tar_member(tf, f"{key:09d}.jpg", jpg)
                    tar_member(tf, f"{key:09d}.json", meta)
                    tar_member(tf, f"{key:09d}.cls", cls)
            return
    elif src.endswith(".jsonl"):
        lines = data.splitlines(keepends=True)
        if action == "rewrite" and lines:
            start = rng.randrange(len(lines))
            for j in range(start, min(start + max(len(lines) // 50, 1), len(lines))):
                lines[j] = text_line(rng, 10_000_000 + j)
        else:
            lines.extend(text_line(rng, 20_000_000 + j) for j in range(max(len(lines) // 20, 1)))
        data = b"".join(lines)
    else:
        if action == "rewrite":
            length = min(max(len(data) // 8, 1), 256 * 1024)
            offset = rng.randrange(max(len(data) - length, 1))
            data = data[:offset] + gen.get(label, length) + data[offset + length:]
        else:
            data = data + gen.get(label, min(max(len(data) // 10, 4096), 4 * MIB))
    write(dst, data)


def mutate(src_root, out, fraction, seed):
    """Copies src_root to out, changing about `fraction` of the files: of those, 45 % get a
    region rewritten, 35 % get data appended, 10 % are deleted, and new files amounting to
    10 % are added."""
    rng = random.Random(f"mutate/{seed}")
    gen = Bytes(f"mutate/{seed}")
    files = []
    for dirpath, dirnames, filenames in os.walk(src_root):
        dirnames.sort()
        for name in sorted(filenames):
            files.append(os.path.relpath(os.path.join(dirpath, name), src_root))
    n_changed = max(1, round(len(files) * fraction)) if files else 0
    chosen = rng.sample(files, n_changed)
    actions = {}
    for k, rel in enumerate(chosen):
        r = k / max(n_changed, 1)
        actions[rel] = "rewrite" if r < 0.45 else "append" if r < 0.8 else "delete" if r < 0.9 else "new"
    stats = {"files": len(files), "rewritten": 0, "appended": 0, "deleted": 0, "added": 0}
    for rel in files:
        src, dst = os.path.join(src_root, rel), os.path.join(out, rel)
        action = actions.get(rel, "copy")
        if action == "delete":
            stats["deleted"] += 1
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if action in ("copy", "new"):
            shutil.copyfile(src, dst)
        else:
            mutate_file(src, dst, action, gen, rng, rel)
            stats["rewritten" if action == "rewrite" else "appended"] += 1
        if action == "new":
            # A new file like its neighbour: same kind, fresh content.
            base, ext = os.path.splitext(rel)
            new_rel = f"{base}-v2new{ext}"
            write_new_like(src, os.path.join(out, new_rel), gen, rng, new_rel)
            stats["added"] += 1
    return stats


def write_new_like(src, dst, gen, rng, label):
    size = os.path.getsize(src)
    if src.endswith(".tar"):
        samples, _ = shard_samples(gen, rng, label, 900_000_000, size)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        write_shard(dst, samples)
    elif src.endswith(".jsonl"):
        write(dst, jsonl_bytes(rng, 30_000_000, size)[0])
    elif src.endswith(".safetensors"):
        write(dst, safetensors_file(gen, rng, label, size))
    else:
        write(dst, image_bytes(gen, label, size))


# ---- named version patterns (one kind of change each, as datasets really change) ----

# pattern -> the kind of v1 it changes
PATTERNS = {
    "append-files": "images",     # new samples added to existing class directories
    "append-lines": "jsonl",      # new records appended to every file
    "append-samples": "shards",   # a shard writer kept going: samples appended to shards
    "delete-files": "images",     # 5 % of the samples removed
    "rename": "images",           # relabelling: 30 % of files moved to another class directory
    "reshard": "shards",          # the same samples repacked into 1.5x larger shards
    "delete-lines": "jsonl",      # 1 % of the records, scattered, deleted from every file
    "checkpoint": "tensors",      # a fine-tuning step: 1 % of the values changed, scattered
}


def _files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            out.append(os.path.relpath(os.path.join(dirpath, name), root))
    return out


def _copy(src_root, out, rel, dst_rel=None):
    dst = os.path.join(out, dst_rel or rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(os.path.join(src_root, rel), dst)  # mtime kept: rsync's quick check applies


def _tar_samples(path):
    """(key, jpg, json, cls) of a shard write_shard made."""
    by_key = {}
    with tarfile.open(path, "r") as tf:
        for m in tf.getmembers():
            key, ext = m.name.split(".", 1)
            by_key.setdefault(int(key), {})[ext] = tf.extractfile(m).read()
    return [(k, v["jpg"], v["json"], v["cls"]) for k, v in sorted(by_key.items())]


def make_version(pattern, src_root, out, seed):
    """Writes v2 of the dataset at src_root (of kind PATTERNS[pattern]) to out. Unchanged
    files keep their mtime, as a copy made with rsync or cp -a would."""
    rng = random.Random(f"version/{pattern}/{seed}")
    gen = Bytes(f"version/{pattern}/{seed}")
    files = _files(src_root)
    if pattern == "append-files":
        for rel in files:
            _copy(src_root, out, rel)
        for k, rel in enumerate(rng.sample(files, max(1, len(files) // 20))):
            d = os.path.dirname(rel)
            new = os.path.join(out, d, f"img_new_{k:07d}.jpg")
            write(new, image_bytes(gen, new, image_size(rng)))
    elif pattern == "delete-files":
        gone = set(rng.sample(files, max(1, len(files) // 20)))
        for rel in files:
            if rel not in gone:
                _copy(src_root, out, rel)
    elif pattern == "rename":
        moved = set(rng.sample(files, max(1, len(files) * 3 // 10)))
        for rel in files:
            if rel in moved:
                d, name = os.path.split(rel)
                target = os.path.join(os.path.dirname(d), f"class_{rng.randint(1, 9):04d}")
                _copy(src_root, out, rel, os.path.join(target, name))
            else:
                _copy(src_root, out, rel)
    elif pattern in ("append-lines", "delete-lines"):
        for i, rel in enumerate(files):
            with open(os.path.join(src_root, rel), "rb") as f:
                lines = f.read().splitlines(keepends=True)
            if pattern == "append-lines":
                lines += [text_line(rng, 40_000_000 + i * 100_000 + j)
                          for j in range(max(len(lines) // 50, 1))]
            else:
                drop = set(rng.sample(range(len(lines)), max(len(lines) // 100, 1)))
                lines = [line for j, line in enumerate(lines) if j not in drop]
            write(os.path.join(out, rel), b"".join(lines))
    elif pattern == "append-samples":
        for i, rel in enumerate(files):
            if i % 4:
                _copy(src_root, out, rel)
                continue
            samples = _tar_samples(os.path.join(src_root, rel))
            more, _ = shard_samples(gen, rng, rel, samples[-1][0] + 1, 512 * 1024)
            path = os.path.join(out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_shard(path, samples + more)
    elif pattern == "reshard":
        samples = [s for rel in files for s in _tar_samples(os.path.join(src_root, rel))]
        target = 1.5 * sum(os.path.getsize(os.path.join(src_root, r)) for r in files) / len(files)
        shard, size, n = [], 0, 0
        for s in samples:
            shard.append(s)
            size += len(s[1]) + len(s[2]) + len(s[3]) + 3 * 512
            if size >= target or s is samples[-1]:
                path = os.path.join(out, "shards", f"train-{n:06d}.tar")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write_shard(path, shard)
                shard, size, n = [], 0, n + 1
    elif pattern == "checkpoint":
        for rel in files:
            with open(os.path.join(src_root, rel), "rb") as f:
                data = bytearray(f.read())
            header = 8 + struct.unpack("<Q", data[:8])[0]
            n_floats = (len(data) - header) // 4
            for _ in range(max(n_floats // 100, 1)):
                at = header + 4 * rng.randrange(n_floats)
                data[at:at + 2] = rng.randbytes(2)  # the low mantissa bits: a small update
            write(os.path.join(out, rel), bytes(data))
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    # What changed is newer than anything in v1, even when both were written within a second.
    newer = max(os.stat(os.path.join(src_root, rel)).st_mtime_ns for rel in files) + 60 * 10**9
    for rel in _files(out):
        src = os.path.join(src_root, rel)
        if not os.path.exists(src) or (os.stat(src).st_mtime_ns
                                       != os.stat(os.path.join(out, rel)).st_mtime_ns):
            os.utime(os.path.join(out, rel), ns=(newer, newer))


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=KINDS + ("mixed",), default="images")
    p.add_argument("--size", type=parse_size, default=parse_size("100M"),
                   help="total bytes to generate (e.g. 50M, 1G); default 100M")
    p.add_argument("--out", required=True, help="output directory (created; must be empty)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mutate", metavar="FROM_DIR",
                   help="instead of generating, write a changed copy of FROM_DIR to --out")
    p.add_argument("--change-fraction", type=float, default=0.1,
                   help="with --mutate: fraction of files to change (default 0.1)")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)

    if os.path.exists(args.out) and os.listdir(args.out):
        p.error(f"--out {args.out} exists and is not empty")
    os.makedirs(args.out, exist_ok=True)
    if args.mutate:
        if not os.path.isdir(args.mutate):
            p.error(f"--mutate {args.mutate} is not a directory")
        if not 0 <= args.change_fraction <= 1:
            p.error("--change-fraction must be in [0, 1]")
        stats = mutate(args.mutate, args.out, args.change_fraction, args.seed)
        summary = {"mutated": args.mutate, "out": args.out, **stats}
    else:
        kinds = KINDS if args.kind == "mixed" else (args.kind,)
        total, files = 0, 0
        for kind in kinds:
            t, f = generate_kind(kind, args.out, args.size // len(kinds), args.seed)
            total, files = total + t, files + f
        summary = {"kind": args.kind, "out": args.out, "bytes": total, "files": files,
                   "seed": args.seed}
    if not args.quiet:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
