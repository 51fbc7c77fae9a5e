"""A small Lightning training run (serial loader with a per-batch sleep) for the hook's tests."""

import argparse
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n, per_sample_s):
        self.n, self.per_sample_s = n, per_sample_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.per_sample_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), i % 4


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
        )

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--load-ms", type=float, default=40.0)
    p.add_argument("--batches", type=int, default=30)
    a = p.parse_args()
    torch.set_num_threads(1)
    loader = DataLoader(Slow(8 * a.batches, a.load_ms / 1000 / 8), batch_size=8, num_workers=0)
    trainer = L.Trainer(
        max_epochs=1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Model(), loader)
    print("trained")


if __name__ == "__main__":
    main()
