"""A Lightning data module on its own: no trainer, no device in the file. Whether it
feeds a GPU is the training machine's answer, so the worker rules judge it against
the target (pinning is left to the importer); the GPU count only sizes the batch."""

import lightning as L
import torch
from torch.utils.data import DataLoader, random_split
from torchvision.datasets import CIFAR10


class CIFARDataModule(L.LightningDataModule):
    def __init__(self, data_dir="./data"):
        super().__init__()
        self.data_dir = data_dir
        self.batch_size = 64 * max(1, torch.cuda.device_count())

    def setup(self, stage=None):
        full = CIFAR10(self.data_dir, train=True)
        self.train, self.val = random_split(full, [45000, 5000])

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.batch_size, num_workers=4)
