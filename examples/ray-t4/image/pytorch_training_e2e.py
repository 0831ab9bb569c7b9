"""FashionMNIST on the Ray cluster with Ray Train's TorchTrainer.

NUM_WORKERS training workers (one GPU each when USE_GPU=1) run train_loop; Ray Train sets up the
process group and shards the data loaders. The final checkpoint and metrics go to --results (the
GCS bucket, mounted on every pod).

`trainc run --local` (which sets TRAINC_LOCAL on the Ray nodes) rehearses it on this machine's CPUs:
2048 random images instead of the download (the nodes reach no data set there), one epoch, and the
Ray workers on the CPU, as the local cluster has no GPUs.
"""
import argparse
import os
import tempfile

import ray
import ray.train
import ray.train.torch
import torch
import torch.nn as nn
from ray.train import Checkpoint, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer
from torch.utils.data import DataLoader, TensorDataset
from torchvision import datasets, transforms


def model():
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def dataset():
    if os.environ.get("TRAINC_LOCAL"):
        g = torch.Generator().manual_seed(0)
        return TensorDataset(torch.rand(2048, 1, 28, 28, generator=g), torch.randint(0, 10, (2048,), generator=g))
    return datasets.FashionMNIST(tempfile.gettempdir(), train=True, download=True, transform=transforms.ToTensor())


def train_loop(config):
    data = dataset()
    loader = ray.train.torch.prepare_data_loader(DataLoader(data, batch_size=config["batch_size"], shuffle=True))
    net = ray.train.torch.prepare_model(model())
    opt = torch.optim.SGD(net.parameters(), lr=config["lr"])
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(config["epochs"]):
        if ray.train.get_context().get_world_size() > 1:
            loader.sampler.set_epoch(epoch)
        total = 0.0
        for x, y in loader:
            loss = loss_fn(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        with tempfile.TemporaryDirectory() as d:
            if ray.train.get_context().get_world_rank() == 0:
                torch.save(net.state_dict(), os.path.join(d, "model.pt"))
            ray.train.report({"epoch": epoch, "loss": total / len(loader)}, checkpoint=Checkpoint.from_directory(d))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True, help="folder (the mounted bucket) for checkpoints and metrics")
    p.add_argument("--epochs", type=int, default=4)
    args = p.parse_args()
    local = bool(os.environ.get("TRAINC_LOCAL"))
    if local:
        args.epochs = 1
    ray.init()
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"lr": 1e-3, "batch_size": 64, "epochs": args.epochs},
        scaling_config=ScalingConfig(num_workers=int(os.environ.get("NUM_WORKERS", "2")),
                                     use_gpu=os.environ.get("USE_GPU", "0") == "1" and not local),
        run_config=RunConfig(name="fashion-mnist", storage_path=args.results),
    )
    result = trainer.fit()
    print(f"final metrics: {result.metrics}", flush=True)


if __name__ == "__main__":
    main()
