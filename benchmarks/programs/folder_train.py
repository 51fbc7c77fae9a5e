"""A user's own PyTorch training on an image folder, without torchvision: Pillow decode,
random crop + flip, a small ResNet-like model of its own. For probe_agreement.py."""

import argparse
import os
import random

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset


class Folder(Dataset):
    def __init__(self, root, size):
        self.items = [
            (os.path.join(root, c, f), i)
            for i, c in enumerate(sorted(os.listdir(root)))
            for f in sorted(os.listdir(os.path.join(root, c)))
        ]
        self.size = size

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        img = Image.open(path).convert("RGB")
        w, h = img.size
        s = min(w, h)
        left, top = random.randint(0, w - s), random.randint(0, h - s)
        img = img.resize((self.size, self.size), Image.BILINEAR, box=(left, top, left + s, top + s))
        if random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - 0.45) / 0.225, label


def block(cin, cout, stride):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
        torch.nn.BatchNorm2d(cout),
        torch.nn.ReLU(inplace=True),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--epochs", type=int, default=50)
    a = p.parse_args()
    loader = DataLoader(
        Folder(a.data, a.size), batch_size=a.batch, shuffle=True, num_workers=a.workers
    )
    model = torch.nn.Sequential(
        block(3, 16, 2),
        block(16, 32, 2),
        block(32, 64, 2),
        block(64, 64, 2),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 2),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(a.epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
