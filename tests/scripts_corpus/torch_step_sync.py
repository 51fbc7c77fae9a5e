"""A training loop that waits for the GPU every step (EC509) and copies samples to it
one by one (EC510), with a Dataset that puts each sample on the GPU itself."""

import argparse

import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

DEVICE = "cuda"


class Frames(Dataset):
    def __init__(self, path):
        self.frames = torch.load(path)
        self.device = DEVICE

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, index):
        frame = self.frames[index].to(self.device)
        return frame, frame.mean().cuda()


def get_loaders(args):
    train = DataLoader(Frames(args.train), batch_size=64, shuffle=True, num_workers=4,
                       pin_memory=True, persistent_workers=True)
    val = DataLoader(Frames(args.val), batch_size=64, num_workers=4, pin_memory=True,
                     persistent_workers=True)
    return train, val


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    total = 0.0
    for step, (images, labels) in enumerate(tqdm(loader)):
        moved = []
        for image in images:
            moved.append(image.to(device))
        images = torch.stack(moved)
        labels = labels.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
        print(f"step {step}: loss {loss}")
        if step % 100 == 0:
            print("every 100 steps is fine:", loss.item())
    return total


def evaluate(model, loader, device):
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            predictions = model(images.to(device)).argmax(1)
            correct += (predictions == labels.to(device)).sum().item()
    return correct


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", default="train.pt")
    parser.add_argument("--val", default="val.pt")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten()).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader, val_loader = get_loaders(args)
    for epoch in range(10):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            train_one_epoch(model, train_loader, optimizer, DEVICE)
        print(epoch, evaluate(model, val_loader, DEVICE))


if __name__ == "__main__":
    main()
