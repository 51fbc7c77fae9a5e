import lightning as L
import torch
from torch.utils.data import DataLoader


class Classifier(L.LightningModule):
    def __init__(self, dataset):
        super().__init__()
        self.dataset = dataset
        self.net = torch.nn.Linear(4096, 1000)

    def train_dataloader(self):
        return DataLoader(self.dataset, batch_size=32, num_workers=0, pin_memory=True)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)


if __name__ == "__main__":
    trainer = L.Trainer(accelerator="gpu", devices=1)
    trainer.fit(Classifier(torch.load("train.pt")))
