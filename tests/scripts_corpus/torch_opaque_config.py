import torch
from torch.utils.data import DataLoader


def build(cfg, dataset):
    # the settings live in a config object: not knowable from the source
    return DataLoader(dataset, **cfg.loader)


if __name__ == "__main__":
    model = torch.nn.Linear(10, 2).cuda()
