import os

import torch
from torch.utils.data import DataLoader as Loader

WORKERS = os.cpu_count()


def main():
    loader = Loader(torch.load("train.pt"), batch_size=128, num_workers=WORKERS,
                    pin_memory=True, persistent_workers=True)
    model = torch.nn.Linear(10, 2).cuda()
    for batch in loader:
        model(batch.cuda())


if __name__ == "__main__":
    main()
