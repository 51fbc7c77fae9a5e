"""A tutorial that trains on the CPU, then shows how a tensor would move to a GPU: the
GPU lines come after the training and do not make it GPU training."""

import torch
from torch import nn
from torch.utils.data import DataLoader

loader = DataLoader(torch.load("points.pt"), batch_size=16, shuffle=True)
model = nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item():.4f}")

if torch.cuda.is_available():
    device = torch.device("cuda")
    x = torch.ones(3).to(device)
    print(x)
