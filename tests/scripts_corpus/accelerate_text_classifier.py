"""The shape of a Hugging Face Accelerate example: the device is Accelerate's, the
loaders are prepared by it, backward goes through accelerator.backward, the loss is kept
on the device."""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification


def training_function(config, train_dataset, eval_dataset):
    accelerator = Accelerator()
    train_dataloader = DataLoader(train_dataset, shuffle=True, batch_size=config["batch_size"])
    eval_dataloader = DataLoader(eval_dataset, shuffle=False, batch_size=32)
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    model, optimizer, train_dataloader, eval_dataloader = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader
    )
    for _epoch in range(config["num_epochs"]):
        model.train()
        total_loss = 0
        for batch in train_dataloader:
            outputs = model(**batch)
            loss = outputs.loss
            total_loss += loss.detach().float()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.print(total_loss / len(train_dataloader))
