"""A small PyTorch training run with known truth, for the measuring hook's tests.

--load-ms: sleep per batch inside Dataset.__getitem__ (spread over the batch's samples);
--compute-ms: sleep inside the model's forward (a device that takes that long). Sleeps
release the CPU, so the injected input share load/(load+compute) holds however busy the
machine is.
"""

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n, per_sample_s):
        self.n, self.per_sample_s = n, per_sample_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.per_sample_s:
            time.sleep(self.per_sample_s)
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), i % 4


class Net(torch.nn.Module):
    def __init__(self, compute_s):
        super().__init__()
        self.compute_s = compute_s
        self.layers = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
        )

    def forward(self, x):
        if self.compute_s:
            time.sleep(self.compute_s)
        return self.layers(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--load-ms", type=float, default=0.0)
    p.add_argument("--compute-ms", type=float, default=0.0)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--item", action="store_true", help="loss.item() every step")
    p.add_argument("--save", default=None, help="torch.save the model every 10 steps here")
    p.add_argument("--exit", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = Slow(a.batch * a.batches, a.load_ms / 1000.0 / a.batch)
    loader = DataLoader(data, batch_size=a.batch, shuffle=True, num_workers=a.workers)
    model = Net(a.compute_ms / 1000.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(a.epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if a.item:
                print(f"step {step} loss {loss.item():.4f}")
            if a.save and step % 10 == 0:
                torch.save(model.state_dict(), a.save)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    print(f"trained {step} steps in {wall:.6f} s ({cpu:.6f} s of CPU)")
    raise SystemExit(a.exit)


if __name__ == "__main__":
    main()
