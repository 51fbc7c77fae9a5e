import multiprocessing

import torch
import torch.utils.data as tud

multiprocessing.set_start_method("spawn")
dataset = torch.load("train.pt")
loader = tud.DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True,
                        persistent_workers=True)
model = torch.nn.Linear(10, 2).to("cuda")
for x, y in loader:
    model(x.to("cuda"))
