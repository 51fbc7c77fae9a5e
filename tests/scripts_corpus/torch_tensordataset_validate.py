"""Small in-memory data and a validation loader rebuilt on every validate() call: workers
would add little to slicing tensors, and persistent workers cannot outlive a loader that
is built anew each epoch."""

import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda"


def validate(model, features, labels):
    loader = DataLoader(TensorDataset(features, labels), batch_size=512, num_workers=2)
    with torch.no_grad():
        return sum(float(model(x.to(device)).sum()) for x, _ in loader)


def main():
    features, labels = torch.randn(60000, 784), torch.randint(0, 10, (60000,))
    train_set = TensorDataset(features, labels)
    loader = DataLoader(train_set, batch_size=256, shuffle=True)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters())
    torch.set_float32_matmul_precision("high")
    for epoch in range(5):
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, validate(model, features, labels))


if __name__ == "__main__":
    main()
