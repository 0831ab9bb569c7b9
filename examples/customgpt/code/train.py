"""Seed 001's trainer: a tiny GPT-style character model, trained with DistributedDataParallel.

torchrun starts it once per process (RANK, LOCAL_RANK, WORLD_SIZE); the process group uses NCCL
on GPUs and gloo otherwise. It reads every *.txt under data/ (synced from the bucket beside the
code), and after each epoch rank 0 writes OUTPUT_DIR/ckpt-epoch-NNNN.pt, which the entry script
syncs to the bucket. --resume PATH (the newest checkpoint, passed by the entry script of a
restarted pod) continues after the epoch that checkpoint holds.
"""
import argparse
import glob
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


class TinyGPT(nn.Module):
    def __init__(self, vocab, dim=64, context=32, layers=2, heads=4):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(context, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        # Causal: a position sees only those before it.
        self.register_buffer("mask", torch.triu(torch.full((context, context), float("-inf")), 1))

    def forward(self, x):
        n = x.shape[1]
        h = self.tokens(x) + self.positions(torch.arange(n, device=x.device))
        return self.head(self.blocks(h, mask=self.mask[:n, :n]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--output_dir", default="out")
    p.add_argument("--data_dir", default="data")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=20, help="optimizer steps per epoch")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--context", type=int, default=32)
    p.add_argument("--pause", type=float, default=0.0, help="seconds to wait after each epoch (tests)")
    p.add_argument("--resume", default="", help="a checkpoint to continue from")
    args = p.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    files = sorted(glob.glob(os.path.join(args.data_dir, "**", "*.txt"), recursive=True))
    if not files:
        raise SystemExit(f"no *.txt under {args.data_dir}")
    text = "".join(open(f, encoding="utf-8").read() for f in files)
    vocab = sorted(set(text))
    data = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)

    torch.manual_seed(0)  # the same initial weights on every rank
    model = TinyGPT(len(vocab), context=args.context).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    start = 1
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["epoch"] + 1
        if rank == 0:
            print(f"resumed from {args.resume} (epoch {ckpt['epoch']}); continuing at epoch {start}", flush=True)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    os.makedirs(args.output_dir, exist_ok=True)

    for epoch in range(start, args.epochs + 1):
        g = torch.Generator().manual_seed(epoch * 1000 + rank)  # each rank its own windows
        total = 0.0
        for _ in range(args.steps):
            at = torch.randint(0, len(data) - args.context - 1, (args.batch,), generator=g)
            x = torch.stack([data[i:i + args.context] for i in at]).to(device)
            y = torch.stack([data[i + 1:i + args.context + 1] for i in at]).to(device)
            loss = F.cross_entropy(ddp(x).reshape(-1, len(vocab)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if rank == 0:
            path = os.path.join(args.output_dir, f"ckpt-epoch-{epoch:04d}.pt")
            torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(), "vocab": vocab}, path)
            print(f"epoch {epoch}/{args.epochs} loss {total / args.steps:.4f}; wrote {path}", flush=True)
        dist.barrier()
        time.sleep(args.pause)
    if start > args.epochs and rank == 0:
        print(f"nothing left to train: the checkpoint is at epoch {start - 1} of {args.epochs}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
