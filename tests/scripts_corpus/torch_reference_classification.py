"""The shape of a reference classification trainer (torchvision references style):
argparse defaults for device, workers and AMP, train_one_epoch() called from the epoch
loop with the loader wrapped in a metric logger, metrics read with .item() every step."""

import argparse

import torch
import torchvision
import utils
from torch import nn


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, scaler=None):
    model.train()
    metric_logger = utils.MetricLogger(delimiter="  ")
    for i, (image, target) in enumerate(metric_logger.log_every(data_loader, args.print_freq)):
        image, target = image.to(device), target.to(device)
        with torch.autocast("cuda", enabled=scaler is not None):
            output = model(image)
            loss = criterion(output, target)
        optimizer.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))
        metric_logger.update(loss=loss.item(), lr=optimizer.param_groups[0]["lr"])
        metric_logger.meters["acc1"].update(acc1.item(), n=image.shape[0])


def evaluate(model, criterion, data_loader, device):
    model.eval()
    with torch.inference_mode():
        for image, target in data_loader:
            output = model(image.to(device, non_blocking=True))
            print(criterion(output, target.to(device)).item())


def main(args):
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    dataset = torchvision.datasets.ImageFolder(args.data_path)
    data_loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=True
    )
    model = torchvision.models.__dict__[args.model](num_classes=1000)
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cuda") if args.amp else None
    for epoch in range(args.epochs):
        train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, scaler)
        evaluate(model, criterion, data_loader, device)


def get_args_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-path", default="/datasets/imagenet")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("-b", "--batch-size", default=32, type=int)
    parser.add_argument("-j", "--workers", default=16, type=int)
    parser.add_argument("--epochs", default=90, type=int)
    parser.add_argument("--lr", default=0.1, type=float)
    parser.add_argument("--print-freq", default=10, type=int)
    parser.add_argument("--amp", action="store_true", help="mixed precision")
    return parser


if __name__ == "__main__":
    main(get_args_parser().parse_args())
