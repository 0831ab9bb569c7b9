"""MNIST with DistributedDataParallel, started by torchrun on every pod.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE; the process group uses NCCL on GPUs and gloo
otherwise. Each rank trains on its own shard of the training set (DistributedSampler); rank 0
evaluates and saves the model.

With --synthetic N (or MNIST_SYNTHETIC=N) it trains on N random images instead, which needs no
download: `trainc run --local` (which sets TRAINC_LOCAL) uses 2048 of them when the data set the
image build fetched is not there.

With --checkpoint-dir DIR, rank 0 writes DIR/ckpt-epoch-NNNN.pt after each epoch (written aside and
renamed, so a pod killed mid-write leaves no partial checkpoint under that name); --resume PATH (the
newest checkpoint, which a spec's `checkpoints.resumeFlag` has the entry script pass to a restarted
step) continues after the epoch it holds.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

DATA = os.environ.get("MNIST_DATA", "/workspace/data")


def mnist(train, download=False):
    # torchvision only for the real data set: the synthetic one needs nothing beyond torch.
    from torchvision import datasets, transforms

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    return datasets.MNIST(DATA, train=train, download=download, transform=transform)


def synthetic(n, seed):
    # The same images on every rank (a fixed seed), as every rank sees the same data set.
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 1, 28, 28, generator=g), torch.randint(0, 10, (n,), generator=g))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save", default="mnist_cnn.pt")
    p.add_argument("--checkpoint-dir", default="", help="write a checkpoint here after each epoch")
    p.add_argument("--resume", default="", help="a checkpoint to continue from")
    p.add_argument("--download-only", action="store_true", help="fetch the data set and exit (image build)")
    p.add_argument("--synthetic", type=int, default=int(os.environ.get("MNIST_SYNTHETIC", "0")),
                   help="train and test on N random images instead of MNIST (no download)")
    args = p.parse_args()
    if args.download_only:
        mnist(True, download=True)
        mnist(False, download=True)
        return
    if not args.synthetic and os.environ.get("TRAINC_LOCAL") and not os.path.isdir(os.path.join(DATA, "MNIST")):
        args.synthetic = 2048

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)

    if args.synthetic and rank == 0:
        print(f"training on {args.synthetic} synthetic images (no MNIST download)", flush=True)
    train = synthetic(args.synthetic, 0) if args.synthetic else mnist(True)
    sampler = DistributedSampler(train)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(Net().to(device), device_ids=[device.index] if cuda else None)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    start = 1
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.module.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["epoch"] + 1
        if rank == 0:
            print(f"resumed from {args.resume} (epoch {ckpt['epoch']}); continuing at epoch {start}", flush=True)
    if args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)

    for epoch in range(start, args.epochs + 1):
        sampler.set_epoch(epoch)
        model.train()
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()
            loss = F.nll_loss(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            if i % args.log_interval == 0:
                print(f"rank {rank} epoch {epoch} batch {i}/{len(loader)} loss {loss.item():.4f}", flush=True)
        if args.checkpoint_dir:
            if rank == 0:
                path = os.path.join(args.checkpoint_dir, f"ckpt-epoch-{epoch:04d}.pt")
                state = {"epoch": epoch, "model": model.module.state_dict(), "optimizer": opt.state_dict()}
                torch.save(state, path + ".partial")
                os.replace(path + ".partial", path)
                print(f"epoch {epoch}/{args.epochs}: wrote {path}", flush=True)
            dist.barrier()

    if rank == 0:
        test = DataLoader(synthetic(args.synthetic // 4, 1) if args.synthetic else mnist(False), batch_size=1000)
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in test:
                correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        print(f"test accuracy {correct / len(test.dataset):.4f}", flush=True)
        torch.save(model.module.state_dict(), args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
