#!/usr/bin/python3
"""Trains a tiny model on a dataset read through a Weft mount: the README's "train from a
remote dataset" walkthrough runs this.

Each file's bytes become a 256-bin byte histogram; a linear layer learns to predict the
file's directory (its class, as ImageFolder would). What matters is the plumbing a real job
has: a map-style WeftDataset under a DataLoader with workers, a HintingSampler that declares
each epoch's order to the spoke's NeuralCache, and a checkpoint saved atomically at the end of
every epoch (and resumed from when the script is run again).

  /usr/bin/python3 python/examples/train.py --data /mnt/weft/datasets/train \
      --checkpoint /mnt/weft/checkpoints/tiny.pt --epochs 3
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.utils.data as tud  # noqa: E402

import weft  # noqa: E402


def histogram(data):
    counts = torch.bincount(torch.frombuffer(bytearray(data), dtype=torch.uint8).long(),
                            minlength=256)
    return (counts.float() / max(1, len(data))).unsqueeze(0)


class Labelled(tud.Dataset):
    """(features, class index) of each file; the class is its first directory."""

    def __init__(self, files):
        self.files = files
        self.classes = sorted({p.split("/")[0] for p in files.paths})
        self.labels = [self.classes.index(p.split("/")[0]) for p in files.paths]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return self.files[i], self.labels[i]


def collate(batch):
    return torch.cat([x for x, _ in batch]), torch.tensor([y for _, y in batch])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="dataset directory (one subdirectory per class)")
    ap.add_argument("--checkpoint", required=True, help="where to save (and resume) the model")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    files = weft.WeftDataset(args.data, transform=histogram)
    dataset = Labelled(files)
    # The sampler's indices are the files' indices: each epoch's order goes to the spoke.
    sampler = weft.HintingSampler(tud.RandomSampler(dataset), files)
    loader = tud.DataLoader(dataset, batch_size=args.batch, sampler=sampler,
                            num_workers=args.workers, collate_fn=collate)
    model = torch.nn.Linear(256, len(dataset.classes))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    start = 0
    if os.path.exists(args.checkpoint):
        state = weft.load_checkpoint(args.checkpoint)
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        start = state["epoch"] + 1
        print(f"resumed from {args.checkpoint} after epoch {state['epoch']}", flush=True)

    for epoch in range(start, start + args.epochs):
        t0 = time.perf_counter()
        samples, losses = 0, []
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            samples += len(y)
            losses.append(loss.item())
        weft.save_checkpoint({"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                              "epoch": epoch}, args.checkpoint)
        print(f"epoch {epoch}: {samples} samples, loss {sum(losses) / len(losses):.3f}, "
              f"{time.perf_counter() - t0:.1f} s, hints sent {sampler.hints_sent}, "
              f"checkpoint saved", flush=True)


if __name__ == "__main__":
    main()
