"""ImageNet-style training: argparse workers, pinned memory, persistent workers, main guard."""

import argparse

import torch
import torchvision
from torch.utils.data import DataLoader


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("-j", "--workers", default=6, type=int, help="data loading workers")
    parser.add_argument("-b", "--batch-size", default=256, type=int)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    train = torchvision.datasets.ImageFolder(args.data)
    loader = DataLoader(
        train,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=True,
        persistent_workers=True,
    )
    model = torchvision.models.resnet50().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, target in loader:
        images = images.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), target.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
