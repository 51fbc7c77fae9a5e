"""The fixed twin of torch_step_sync.py: the Dataset returns CPU tensors, the batch is
moved once per step, the loss is accumulated on the GPU and read every 100 steps."""

import argparse

import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

DEVICE = "cuda"
LOG_EVERY = 100


class Frames(Dataset):
    def __init__(self, path):
        self.frames = torch.load(path)

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, index):
        frame = self.frames[index].to(torch.float32)
        return frame, frame.mean()


def get_loaders(args):
    train = DataLoader(Frames(args.train), batch_size=64, shuffle=True, num_workers=4,
                       pin_memory=True, persistent_workers=True)
    val = DataLoader(Frames(args.val), batch_size=64, num_workers=4, pin_memory=True,
                     persistent_workers=True)
    return train, val


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    running = torch.zeros((), device=device)
    for step, (images, labels) in enumerate(tqdm(loader)):
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
        if (step + 1) % LOG_EVERY == 0:
            print(f"step {step + 1}: loss {running.item() / LOG_EVERY:.4f}")
            running.zero_()
    return running


def evaluate(model, loader, device):
    correct = torch.zeros((), device=device)
    with torch.no_grad():
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            correct += (model(images).argmax(1) == labels.to(device)).sum()
    return correct.item()


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
        total = train_one_epoch(model, train_loader, optimizer, DEVICE)
        print(epoch, total.item(), evaluate(model, val_loader, DEVICE))


if __name__ == "__main__":
    main()
